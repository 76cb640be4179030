/* SPDX-License-Identifier: BSD-2-Clause */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include "host_memory.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "status.h"

/* Aligned for full-width vector loads and for DLPack consumers, which prefer 256 bytes. */
#define CB_HOST_ALIGNMENT ((size_t)256)
#define CB_HUGE_PAGE ((size_t)2 << 20)

int cb_host_huge_pages = -1;
static pthread_once_t huge_pages_once = PTHREAD_ONCE_INIT;

static void read_huge_pages_setting(void)
{
    if (cb_host_huge_pages < 0) {
        const char *setting = getenv("CBLOB_HUGE_PAGES");
        cb_host_huge_pages = setting == NULL || strcmp(setting, "0") != 0;
    }
}

/* A mapping of at least `size` bytes starting on a huge-page boundary: a longer one, trimmed. */
static void *map_aligned(size_t size, size_t *length)
{
    const size_t rounded = (size + CB_HUGE_PAGE - 1) / CB_HUGE_PAGE * CB_HUGE_PAGE;
    if (rounded < size || rounded > SIZE_MAX - CB_HUGE_PAGE)
        return NULL;
    char *raw = mmap(NULL, rounded + CB_HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *start = (char *)(((uintptr_t)raw + CB_HUGE_PAGE - 1) & ~(uintptr_t)(CB_HUGE_PAGE - 1));
    if (start > raw)
        munmap(raw, (size_t)(start - raw));
    const size_t tail = (size_t)(raw + rounded + CB_HUGE_PAGE - (start + rounded));
    if (tail > 0)
        munmap(start + rounded, tail);
    *length = rounded;
    return start;
}

cblob_status cb_host_alloc(size_t size, void **out, size_t *mapped_size)
{
    if (size >= CB_MAPPED_HOST_BYTES) {
        size_t length = 0;
        void *ptr = map_aligned(size, &length);
        if (ptr == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "cannot map %zu bytes of host memory", size);
        pthread_once(&huge_pages_once, read_huge_pages_setting);
        if (cb_host_huge_pages)
            (void)madvise(ptr, length, MADV_HUGEPAGE); /* a request: without THP it fails, harmlessly */
        *out = ptr;
        *mapped_size = length;
        return CBLOB_OK;
    }
    /* aligned_alloc wants a multiple of the alignment. */
    const size_t rounded = (size + CB_HOST_ALIGNMENT - 1) / CB_HOST_ALIGNMENT * CB_HOST_ALIGNMENT;
    void *ptr = NULL;
    if (rounded < size || (ptr = aligned_alloc(CB_HOST_ALIGNMENT, rounded)) == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of host memory", size);
    memset(ptr, 0, size);
    *out = ptr;
    *mapped_size = 0;
    return CBLOB_OK;
}

void cb_host_free(void *ptr, size_t mapped_size)
{
    if (mapped_size > 0)
        munmap(ptr, mapped_size);
    else
        free(ptr);
}
