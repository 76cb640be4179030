// SPDX-License-Identifier: BSD-2-Clause
module cblob

go 1.19
