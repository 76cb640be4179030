module cblob

go 1.19
