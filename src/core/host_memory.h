/* SPDX-License-Identifier: BSD-2-Clause */
/* Host buffers of storages: zero-filled, 256-byte aligned, and for large ones mapped straight from
 * the kernel on 2 MiB boundaries with transparent huge pages asked for.
 *
 * Why large buffers are mapped: fresh anonymous pages are already zero, so nothing fills them
 * before use, and each page is first touched by the thread that first writes it (with the thread
 * pool, the threads a large operation runs on), so page faults spread over the cores. Why huge
 * pages: faulting in memory costs a page fault per page, and 2 MiB pages cut the faults 512-fold;
 * bench/bench_threads measured fresh memory filled 4-5x faster and streaming reads 10-20% faster
 * with them (docs/benchmarks.md, "Page size"), as NumPy found for its arrays from 4 MiB on.
 * Where the kernel has no free huge page it may compact memory first (defrag "madvise"), which can
 * cost more than it saves: CBLOB_HUGE_PAGES=0 in the environment (read once) turns the request
 * off, and the kernel's own setting (transparent_hugepage "never") always wins. */
#ifndef CBLOB_SRC_HOST_MEMORY_H
#define CBLOB_SRC_HOST_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#include "cblob/cblob.h"

/* From this many bytes on, host buffers are mapped (as NumPy maps arrays of 4 MiB and more). */
#define CB_MAPPED_HOST_BYTES ((size_t)4 << 20)

/* Whether large buffers ask for huge pages: CBLOB_HUGE_PAGES (read at the first large buffer),
 * or what bench/bench_threads sets before that to compare both. */
extern int cb_host_huge_pages; /* -1: not read yet; 0: no; 1: yes */

/* A buffer of `size` bytes (> 0), zero-filled when `zero` is set or when it is mapped (the
 * kernel's fresh pages are zero). Free it with cb_host_free and the same size, from any thread. */
cblob_status cb_host_alloc(size_t size, bool zero, void **out);
void cb_host_free(void *ptr, size_t size);

#endif
