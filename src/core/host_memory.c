/* SPDX-License-Identifier: BSD-2-Clause */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include "host_memory.h"

#include <pthread.h>
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

/* Bytes of large buffers freed lately: freed_bytes, the last of them at freed_at (seconds). A
 * large allocation is rare next to the page faults it costs, so one lock guards both. */
static struct {
    pthread_mutex_t lock;
    double freed_at;
    size_t freed_bytes;
} reuse = {.lock = PTHREAD_MUTEX_INITIALIZER};

static double seconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static void note_freed(size_t length)
{
    const double now = seconds_now();
    pthread_mutex_lock(&reuse.lock);
    if (now - reuse.freed_at > CB_HUGE_PAGES_REUSE_SECONDS)
        reuse.freed_bytes = 0;
    reuse.freed_bytes = reuse.freed_bytes + length < length ? SIZE_MAX : reuse.freed_bytes + length;
    reuse.freed_at = now;
    pthread_mutex_unlock(&reuse.lock);
}

/* Whether a new mapping of `length` bytes asks for huge pages (and, under the default policy,
 * takes its bytes out of those lately freed). */
static bool wants_huge_pages(size_t length)
{
    pthread_once(&huge_pages_once, read_huge_pages_setting);
    if (cb_host_huge_pages != CB_HUGE_PAGES_REUSED)
        return cb_host_huge_pages == CB_HUGE_PAGES_ALWAYS;
    const double now = seconds_now();
    pthread_mutex_lock(&reuse.lock);
    const bool reused = now - reuse.freed_at <= CB_HUGE_PAGES_REUSE_SECONDS && reuse.freed_bytes >= length;
    if (reused)
        reuse.freed_bytes -= length;
    pthread_mutex_unlock(&reuse.lock);
    return reused;
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
    if (rounded < size || (ptr = aligned_alloc(CB_HOST_ALIGNMENT, rounded)) == NULL)
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

