/* SPDX-License-Identifier: BSD-2-Clause */
/* Names to the first position that holds each: a hash table, so that matching n layers by name is
 * linear in n (nets of thousands of layers are common; a scan per name would be quadratic). */
#ifndef CBLOB_SRC_NAME_INDEX_H
#define CBLOB_SRC_NAME_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"

typedef struct cb_name_index {
    const char *const *names; /* borrowed: they must outlive the index */
    int64_t *slots;           /* positions in names; -1 for a free slot */
    size_t mask;
    bool fold_case;           /* names equal ignoring ASCII case are the same */
} cb_name_index;

/* Indexes names[0, count) (NUL-terminated; equal names keep the first position). */
cblob_status cb_name_index_make(const char *const *names, int64_t count, cb_name_index *out);
/* An empty index with room for `count` names of the array `names` (which may be filled later),
 * comparing ignoring ASCII case when fold_case. */
cblob_status cb_name_index_init(const char *const *names, int64_t count, bool fold_case, cb_name_index *out);
/* Adds names[position] unless an equal name is there: returns -1 when it was added, else the
 * position that holds it. At most `count` names may be added. */
int64_t cb_name_index_put(cb_name_index *index, int64_t position);
/* The first position of the name of `length` bytes at name (which needs no terminator), or -1. */
int64_t cb_name_index_find(const cb_name_index *index, const char *name, size_t length);
void cb_name_index_free(cb_name_index *index);

#endif
