/* SPDX-License-Identifier: BSD-2-Clause */
/* Host buffers of storages: zero-filled, 256-byte aligned, and for large ones mapped straight from
 * the kernel on 2 MiB boundaries.
 *
 * Why large buffers are mapped: fresh anonymous pages are already zero, so nothing fills them
 * before use, and each page is first touched by the thread that first writes it (with the thread
 * pool, the threads a large operation runs on), so page faults spread over the cores.
 *
 * Huge pages, only where memory is reused (docs/benchmarks.md, "Pages: cold and warm", measured by
 * bench/bench_cold). 2 MiB pages cut page faults 512-fold and fill memory several times faster when
 * the kernel has free 2 MiB pages at hand: in a loop that frees and allocates large buffers, the
 * pages just freed. A fresh process meets the other case. On a virtual machine with free page
 * reporting (virtio-balloon), free 2 MiB blocks are handed back to the host after about two
 * seconds, and each one touched again costs a host fault and a second zeroing, so a cold fill
 * with huge pages asked for is slower than with 4 KiB pages, which the kernel takes from its
 * smaller free blocks first. On bare metal, a request the kernel cannot serve from free blocks
 * compacts memory first (defrag "madvise"), which can cost more than the faults it saves. So a
 * large buffer asks for huge pages only when the process freed as many bytes of large buffers
 * within the last second (CB_HUGE_PAGES_REUSED): memory the kernel has just been given back,
 * still backed and free in large blocks. It won cold (a 1 GiB model load 1.3-1.8x faster than
 * with huge pages always) and warm for fills, but not warm for loads repeated in one process,
 * which CBLOB_HUGE_PAGES=1 serves better. CBLOB_HUGE_PAGES=1 in the environment (read once) asks
 * for them always, CBLOB_HUGE_PAGES=0 never (any other value: the default); the kernel's own
 * setting (transparent_hugepage) applies in every case: "always" gives huge pages without
 * asking, "never" refuses them. */
#ifndef CBLOB_SRC_HOST_MEMORY_H
#define CBLOB_SRC_HOST_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#include "cblob/cblob.h"

/* From this many bytes on, host buffers are mapped (as NumPy maps arrays of 4 MiB and more). */
#define CB_MAPPED_HOST_BYTES ((size_t)4 << 20)

/* How recently large buffers must have been freed for their bytes to count as reusable: well
 * inside the two seconds after which free page reporting hands free blocks back to the host. */
#define CB_HUGE_PAGES_REUSE_SECONDS 1.0

/* When large buffers ask for huge pages. */
enum {
    CB_HUGE_PAGES_UNREAD = -1, /* CBLOB_HUGE_PAGES not read yet */
    CB_HUGE_PAGES_NEVER = 0,   /* CBLOB_HUGE_PAGES=0 */
    CB_HUGE_PAGES_ALWAYS = 1,  /* CBLOB_HUGE_PAGES=1 */
    CB_HUGE_PAGES_REUSED = 2,  /* the default: when as many bytes of large buffers were just freed */
};

/* The policy: CBLOB_HUGE_PAGES (read at the first large buffer), or what bench/bench_threads sets
 * before that to compare them. */
extern int cb_host_huge_pages;

/* A buffer of `size` bytes (> 0), zero-filled when `zero` is set or when it is mapped (the
 * kernel's fresh pages are zero). Free it with cb_host_free and the same size, from any thread. */
cblob_status cb_host_alloc(size_t size, bool zero, void **out);
void cb_host_free(void *ptr, size_t size);

#endif
