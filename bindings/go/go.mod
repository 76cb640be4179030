// SPDX-License-Identifier: BSD-2-Clause
module example.com/cblob

go 1.19
