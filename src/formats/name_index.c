/* SPDX-License-Identifier: BSD-2-Clause */
#include "name_index.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "status.h"

static unsigned char folded(const cb_name_index *index, char c)
{
    return (unsigned char)(index->fold_case && c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
}

static uint64_t hash_bytes(const cb_name_index *index, const char *name, size_t length)
{
    uint64_t hash = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < length; ++i)
        hash = (hash ^ folded(index, name[i])) * 1099511628211ull;
    return hash;
}

static bool same_name(const cb_name_index *index, const char *held, const char *name, size_t length)
{
    if (!index->fold_case)
        return strncmp(held, name, length) == 0 && held[length] == '\0';
    for (size_t i = 0; i < length; ++i)
        if (held[i] == '\0' || folded(index, held[i]) != folded(index, name[i]))
            return false;
    return held[length] == '\0';
}

/* The slot holding the name, or the free slot where it would go. */
static size_t slot_of(const cb_name_index *index, const char *name, size_t length)
{
    size_t at = (size_t)hash_bytes(index, name, length) & index->mask;
    while (index->slots[at] >= 0 && !same_name(index, index->names[index->slots[at]], name, length))
        at = (at + 1) & index->mask;
    return at;
}

cblob_status cb_name_index_init(const char *const *names, int64_t count, bool fold_case, cb_name_index *out)
{
    size_t capacity = 16;
    while (capacity < 2 * (size_t)count)
        capacity *= 2;
    cb_name_index index = {.names = names, .slots = cb_malloc(capacity * sizeof *index.slots), .mask = capacity - 1,
                           .fold_case = fold_case};
    if (index.slots == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to index %" PRId64 " names", count);
    memset(index.slots, 0xff, capacity * sizeof *index.slots); /* every slot -1 */
    *out = index;
    return CBLOB_OK;
}

int64_t cb_name_index_put(cb_name_index *index, int64_t position)
{
    const char *name = index->names[position];
    const size_t at = slot_of(index, name, strlen(name));
    if (index->slots[at] >= 0)
        return index->slots[at];
    index->slots[at] = position;
    return -1;
}

cblob_status cb_name_index_make(const char *const *names, int64_t count, cb_name_index *out)
{
    CB_TRY(cb_name_index_init(names, count, false, out));
    for (int64_t i = 0; i < count; ++i)
        (void)cb_name_index_put(out, i);
    return CBLOB_OK;
}

int64_t cb_name_index_find(const cb_name_index *index, const char *name, size_t length)
{
    return index->slots[slot_of(index, name, length)];
}

void cb_name_index_free(cb_name_index *index)
{
    free(index->slots);
    *index = (cb_name_index){0};
}
