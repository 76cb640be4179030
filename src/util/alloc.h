/* SPDX-License-Identifier: BSD-2-Clause */
/* Host memory (src/util): the one allocator every part of cblob uses, so that a test can make
 * any allocation fail (src/util/fault.h, CB_FAULT_ALLOC) and prove that the call that met it
 * fails with CBLOB_ERR_OUT_OF_MEMORY and changes nothing. Raw malloc, calloc, realloc and strdup
 * appear nowhere else (tests/tools/one_source.py checks). The functions behave as the C
 * library's, NULL on failure. */
#ifndef CBLOB_UTIL_ALLOC_H
#define CBLOB_UTIL_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

void *cb_malloc(size_t size);
void *cb_calloc(size_t count, size_t size);
/* On failure the block stays as it was, as realloc leaves it. */
void *cb_realloc(void *ptr, size_t size);
char *cb_strdup(const char *text);
char *cb_strndup(const char *text, size_t size);
/* C11's aligned_alloc (size a multiple of alignment). */
void *cb_aligned_alloc(size_t alignment, size_t size);
void cb_free(void *ptr);

/* For allocators of their own (mappings, huge pages, pinned device-visible memory): whether the
 * allocation about to be made must fail, as an injected failure says. */
bool cb_alloc_refused(void);

#endif
