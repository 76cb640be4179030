/* SPDX-License-Identifier: BSD-2-Clause */
/* strndup */
#define _GNU_SOURCE
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#include "fault.h"

bool cb_alloc_refused(void)
{
    return cb_fault_check(CB_FAULT_ALLOC) != 0;
}

void *cb_malloc(size_t size)
{
    return cb_alloc_refused() ? NULL : malloc(size);
}

void *cb_calloc(size_t count, size_t size)
{
    return cb_alloc_refused() ? NULL : calloc(count, size);
}

void *cb_realloc(void *ptr, size_t size)
{
    return cb_alloc_refused() ? NULL : realloc(ptr, size);
}

char *cb_strdup(const char *text)
{
    return cb_alloc_refused() ? NULL : strdup(text);
}

char *cb_strndup(const char *text, size_t size)
{
    return cb_alloc_refused() ? NULL : strndup(text, size);
}

void *cb_aligned_alloc(size_t alignment, size_t size)
{
    return cb_alloc_refused() ? NULL : aligned_alloc(alignment, size);
}

void cb_free(void *ptr)
{
    free(ptr);
}
