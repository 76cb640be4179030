/* SPDX-License-Identifier: BSD-2-Clause */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include "host_memory.h"
#include "alloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "status.h"

/* Aligned for full-width vector loads and for DLPack consumers, which prefer 256 bytes. */
#define CB_HOST_ALIGNMENT ((size_t)256)
#define CB_HUGE_PAGE ((size_t)2 << 20)

int cb_host_huge_pages = CB_HUGE_PAGES_UNREAD;
static pthread_once_t huge_pages_once = PTHREAD_ONCE_INIT;

static void read_huge_pages_setting(void)
{
    if (cb_host_huge_pages == CB_HUGE_PAGES_UNREAD) {
        const char *setting = getenv("CBLOB_HUGE_PAGES");
        cb_host_huge_pages = setting == NULL                ? CB_HUGE_PAGES_REUSED
                             : strcmp(setting, "0") == 0 ? CB_HUGE_PAGES_NEVER
                             : strcmp(setting, "1") == 0 ? CB_HUGE_PAGES_ALWAYS
                                                         : CB_HUGE_PAGES_REUSED;
    }
}

/* Bytes of large buffers freed lately, the last of them at freed_at (CLOCK_MONOTONIC, ns).
 * Atomics, not a lock: a child forked while another thread held a lock here would hang at its
 * first large buffer. The two may be read a moment apart: the policy is a guess either way. */
static _Atomic int64_t freed_at;
static _Atomic size_t freed_bytes;

static int64_t nanoseconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static bool freed_lately(int64_t now)
{
    return now - atomic_load_explicit(&freed_at, memory_order_relaxed) <=
           (int64_t)(CB_HUGE_PAGES_REUSE_SECONDS * 1e9);
}

static void note_freed(size_t length)
{
    const int64_t now = nanoseconds_now();
    if (freed_lately(now))
        atomic_fetch_add_explicit(&freed_bytes, length, memory_order_relaxed);
    else
        atomic_store_explicit(&freed_bytes, length, memory_order_relaxed);
    atomic_store_explicit(&freed_at, now, memory_order_relaxed);
}

/* Whether a new mapping of `length` bytes asks for huge pages (and, under the default policy,
 * takes its bytes out of those lately freed). */
static bool wants_huge_pages(size_t length)
{
    pthread_once(&huge_pages_once, read_huge_pages_setting);
    if (cb_host_huge_pages != CB_HUGE_PAGES_REUSED)
        return cb_host_huge_pages == CB_HUGE_PAGES_ALWAYS;
    if (!freed_lately(nanoseconds_now()))
        return false;
    size_t left = atomic_load_explicit(&freed_bytes, memory_order_relaxed);
    while (left >= length && !atomic_compare_exchange_weak_explicit(&freed_bytes, &left, left - length,
                                                                    memory_order_relaxed, memory_order_relaxed)) {
    }
    return left >= length;
}

/* The length of the mapping of a buffer of `size` bytes: whole huge pages. */
static size_t mapped_length(size_t size)
{
    return (size + CB_HUGE_PAGE - 1) / CB_HUGE_PAGE * CB_HUGE_PAGE;
}

/* A mapping of `length` bytes (whole huge pages) starting on a huge-page boundary: a longer one,
 * trimmed. */
static void *map_aligned(size_t length)
{
    char *raw = mmap(NULL, length + CB_HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *start = (char *)(((uintptr_t)raw + CB_HUGE_PAGE - 1) & ~(uintptr_t)(CB_HUGE_PAGE - 1));
    if (start > raw)
        munmap(raw, (size_t)(start - raw));
    const size_t tail = (size_t)(raw + length + CB_HUGE_PAGE - (start + length));
    if (tail > 0)
        munmap(start + length, tail);
    return start;
}

cblob_status cb_host_alloc(size_t size, bool zero, void **out)
{
    if (size >= CB_MAPPED_HOST_BYTES) {
        const size_t length = mapped_length(size);
        void *ptr = length >= size && length <= SIZE_MAX - CB_HUGE_PAGE ? map_aligned(length) : NULL;
        if (ptr == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "cannot map %zu bytes of host memory", size);
        if (wants_huge_pages(length))
            (void)madvise(ptr, length, MADV_HUGEPAGE); /* a request: without THP it fails, harmlessly */
        *out = ptr;
        return CBLOB_OK;
    }
    /* aligned_alloc wants a multiple of the alignment. */
    const size_t rounded = (size + CB_HOST_ALIGNMENT - 1) / CB_HOST_ALIGNMENT * CB_HOST_ALIGNMENT;
    void *ptr = NULL;
    if (rounded < size || (ptr = cb_aligned_alloc(CB_HOST_ALIGNMENT, rounded)) == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of host memory", size);
    if (zero)
        memset(ptr, 0, size);
    *out = ptr;
    return CBLOB_OK;
}

void cb_host_free(void *ptr, size_t size)
{
    if (ptr == NULL)
        return;
    if (size >= CB_MAPPED_HOST_BYTES) {
        munmap(ptr, mapped_length(size));
        note_freed(mapped_length(size));
    } else
        free(ptr);
}

