/* SPDX-License-Identifier: BSD-2-Clause */
/* Arenas: many blobs' data or diff in one buffer (Caffe's learnable-params buffer), so that one
 * collective moves them all. The arena is a 1-D blob owning the buffer; each member's part gets
 * a storage of its own whose home copy (host or device) is the member's slice of that buffer,
 * a caller buffer in the storage's terms whose release drops the member's hold on the arena's
 * storage. The member's other copy stays a memory of its own, synced lazily as ever; a
 * collective brings the members' values into their slices first (gather) and marks the slices
 * current afterwards (scatter). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "alloc.h"
#include "status.h"
#include "threads.h"

#define CB_ARENA_MAX_ALIGNMENT 4096

/* What an arena hangs on its blob (blob.h, extensions): its members. */
typedef struct cb_param_arena {
    cb_blob_extension extension;
    cblob_part part;
    bool on_device; /* the home copy: the device copy of the context's device, or the host copy */
    int64_t count;
    cblob_blob **members;  /* held */
    cb_storage **slices;   /* held: each member's storage over its slice, to see whether it left */
} cb_param_arena;

static void arena_free(cb_param_arena *arena)
{
    if (arena == NULL)
        return;
    for (int64_t i = 0; i < arena->count; ++i) {
        cb_storage_release(arena->slices[i]);
        cb_blob_release(arena->members[i]);
    }
    free(arena->members);
    free(arena->slices);
    free(arena);
}

static cblob_blob *release_arena(cb_blob_extension *extension)
{
    arena_free((cb_param_arena *)extension);
    return NULL;
}

static const cb_extension_kind arena_kind = {.release = release_arena};

static cb_param_arena *arena_of(const cblob_blob *blob)
{
    return (cb_param_arena *)cb_blob_extension_of(blob, &arena_kind, NULL);
}

static bool is_member(const cb_param_arena *arena, int64_t i)
{
    return arena->members[i]->storage[arena->part] == arena->slices[i];
}

int64_t cb_param_arena_count(const cblob_blob *arena_blob)
{
    const cb_param_arena *arena = arena_of(arena_blob);
    return arena != NULL ? arena->count : 0;
}

const cblob_blob *cb_param_arena_current_member(const cblob_blob *arena_blob, int64_t i)
{
    const cb_param_arena *arena = arena_of(arena_blob);
    return is_member(arena, i) ? arena->members[i] : NULL;
}

/* The home copy of a member (or of the arena blob), current (read) or about to be written
 * (write), moving its head as the accessors do: a member written on its other side is copied
 * into its slice. */
static cblob_status touch_home(const cb_param_arena *arena, cblob_blob *member, bool writable)
{
    void *ptr = NULL;
    return arena->on_device ? cb_blob_device(member, arena->part, writable, &ptr)
                            : cb_blob_host(member, arena->part, writable, &ptr);
}

/* Makes the arena's home copy current (a collective may have run on its other copy, or a caller
 * written there), then each member's: read to gather, written to scatter. */
static cblob_status touch_members(cblob_blob *blob, cblob_part part, bool writable)
{
    cb_param_arena *arena = arena_of(blob);
    if (arena == NULL || arena->part != part)
        return CBLOB_OK;
    CB_TRY(touch_home(arena, blob, false));
    for (int64_t i = 0; i < arena->count; ++i)
        if (is_member(arena, i))
            CB_TRY(touch_home(arena, arena->members[i], writable));
    return CBLOB_OK;
}

cblob_status cb_param_arena_gather(cblob_blob *blob, cblob_part part)
{
    return touch_members(blob, part, false);
}

cblob_status cb_param_arena_scatter(cblob_blob *blob, cblob_part part)
{
    return touch_members(blob, part, true);
}

/* ---- cblob_arena_create --------------------------------------------------------------- */

static cblob_status check_alignment(int64_t alignment, const cb_dtype_info *dtype)
{
    if (alignment < (int64_t)dtype->size || alignment > CB_ARENA_MAX_ALIGNMENT || (alignment & (alignment - 1)) != 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "alignment %" PRId64 " is not a power of two from the element size (%zu for %s) to %d",
                       alignment, dtype->size, dtype->name, CB_ARENA_MAX_ALIGNMENT);
    return CBLOB_OK;
}

static cblob_status check_member(cblob_blob *const *blobs, int64_t i, cblob_part part)
{
    const cblob_blob *blob = blobs[i];
    if (blob->dtype != blobs[0]->dtype)
        return cb_fail(CBLOB_ERR_DTYPE, "blobs[%" PRId64 "] is %s, blobs[0] %s: an arena holds one dtype", i,
                       blob->dtype->name, blobs[0]->dtype->name);
    if (blob->context != blobs[0]->context)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "blobs[%" PRId64 "] has another context than blobs[0]", i);
    /* A member's part gets a storage over its slice: what its extensions (a window, open
     * mappings) would refuse is refused here, in their words. */
    const cblob_status allowed = cb_blob_allow(blob, CB_BLOB_REPLACE);
    if (allowed != CBLOB_OK) {
        cb_saved_error why;
        cb_error_save(&why);
        return cb_fail(allowed, "blobs[%" PRId64 "]: %s", i, why.text + why.detail_start);
    }
    if (arena_of(blob) != NULL)
        return cb_fail(CBLOB_ERR_STATE, "blobs[%" PRId64 "] is an arena itself", i);
    for (int64_t j = 0; j < i; ++j) {
        if (blobs[j] == blob)
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "blobs[%" PRId64 "] is blobs[%" PRId64 "] again", i, j);
        if (blob->storage[part] != NULL && blobs[j]->storage[part] == blob->storage[part])
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "blobs[%" PRId64 "] shares its %s with blobs[%" PRId64 "]", i,
                           part == CBLOB_PART_DATA ? "data" : "diff", j);
    }
    return CBLOB_OK;
}

static size_t round_up(size_t bytes, size_t alignment)
{
    return (bytes + alignment - 1) & ~(alignment - 1);
}

/* Each member's byte offset in the buffer, and the buffer's elements (a whole number of
 * alignments); a blob without elements takes no room. */
static cblob_status lay_out(cblob_blob *const *blobs, int64_t count, size_t alignment, size_t *offsets,
                            int64_t *out_elements)
{
    size_t end = 0;
    for (int64_t i = 0; i < count; ++i) {
        offsets[i] = end;
        const size_t bytes = round_up(cb_blob_bytes(blobs[i]), alignment);
        if (bytes < cb_blob_bytes(blobs[i]) || end + bytes < end || end + bytes > (size_t)INT64_MAX)
            return cb_fail(CBLOB_ERR_OVERFLOW, "the arena's size overflows at blobs[%" PRId64 "]", i);
        end += bytes;
    }
    *out_elements = (int64_t)(end / blobs[0]->dtype->size);
    return CBLOB_OK;
}

static void release_arena_storage(void *ptr, void *user_data)
{
    (void)ptr;
    cb_storage_release(user_data);
}

/* Copies the member's current values into its slice of `base` (the arena's home copy). */
static cblob_status copy_in(const cb_param_arena *arena, const cb_device *device, cblob_blob *member, char *slice)
{
    const void *from = NULL;
    if (!arena->on_device) {
        CB_TRY(cb_blob_host(member, arena->part, false, (void **)&from));
        cb_parallel_copy(slice, from, cb_blob_bytes(member));
        return CBLOB_OK;
    }
    CB_TRY(cb_blob_device(member, arena->part, false, (void **)&from));
    return device->backend->memory->copy(device, slice, from, cb_blob_bytes(member), CB_COPY_DEVICE_TO_DEVICE);
}

/* Makes the member's part a storage over its slice, held by the arena. */
static void install(cb_param_arena *arena, int64_t i, cblob_blob *member, cb_storage *slice_storage,
                    cb_storage *arena_storage, const cb_device *device, char *slice)
{
    cb_storage_retain(arena_storage);
    const cb_release release = {release_arena_storage, arena_storage};
    if (arena->on_device)
        cb_storage_set_gpu(slice_storage, device, slice, release);
    else
        cb_storage_set_cpu(slice_storage, slice, release);
    cb_storage_release(member->storage[arena->part]);
    member->storage[arena->part] = slice_storage;
    cb_storage_retain(slice_storage);
    arena->slices[i] = slice_storage;
    cb_blob_retain(member);
    arena->members[i] = member;
    arena->count = i + 1;
}

static cb_param_arena *arena_new(int64_t count, cblob_part part, bool on_device)
{
    cb_param_arena *arena = cb_calloc(1, sizeof *arena);
    if (arena == NULL)
        return NULL;
    arena->extension.kind = &arena_kind;
    arena->part = part;
    arena->on_device = on_device;
    arena->members = cb_calloc((size_t)count, sizeof *arena->members);
    arena->slices = cb_calloc((size_t)count, sizeof *arena->slices);
    if (arena->members == NULL || arena->slices == NULL) {
        arena_free(arena);
        return NULL;
    }
    return arena;
}

/* Fills the arena blob's buffer and moves the members in. Storages for the slices are made
 * first, so that running out of memory changes no member. */
static cblob_status fill_arena(cblob_blob *arena_blob, cblob_blob *const *blobs, int64_t count, const size_t *offsets,
                               cb_storage **fresh)
{
    cb_param_arena *arena = arena_of(arena_blob);
    const cb_device *device = NULL;
    if (arena->on_device)
        CB_TRY(cb_context_device(arena_blob->context, &device));
    for (int64_t i = 0; i < count; ++i)
        if (blobs[i]->shape.count > 0)
            CB_TRY(cb_storage_create(cb_blob_bytes(blobs[i]), &fresh[i]));
    char *base = NULL;
    if (arena_blob->shape.count > 0)
        CB_TRY(arena->on_device ? cb_blob_device(arena_blob, arena->part, true, (void **)&base)
                                : cb_blob_host(arena_blob, arena->part, true, (void **)&base));
    for (int64_t i = 0; i < count; ++i)
        if (fresh[i] != NULL)
            CB_TRY(copy_in(arena, device, blobs[i], base + offsets[i]));
    int64_t installed = 0;
    for (int64_t i = 0; i < count; ++i)
        if (fresh[i] != NULL) {
            install(arena, installed++, blobs[i], fresh[i], arena_blob->storage[arena->part], device,
                    base + offsets[i]);
            fresh[i] = NULL;
        }
    return CBLOB_OK;
}

static cblob_status make_arena(cblob_blob *const *blobs, int64_t count, cblob_part part, int64_t elements,
                               const size_t *offsets, cblob_blob **out)
{
    cblob_context *context = blobs[0]->context;
    cblob_blob *arena_blob = NULL;
    CB_TRY(cb_blob_create(context, blobs[0]->dtype->dtype, 1, &elements, &arena_blob));
    const bool on_device = atomic_load(&context->mode) == CBLOB_MODE_GPU;
    cb_param_arena *arena = arena_new(count, part, on_device);
    if (arena != NULL)
        cb_blob_extend(arena_blob, &arena->extension);
    cb_storage **fresh = cb_calloc((size_t)count, sizeof *fresh);
    cblob_status status = arena == NULL || fresh == NULL
                              ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for an arena of %" PRId64 " blobs", count)
                              : fill_arena(arena_blob, blobs, count, offsets, fresh);
    for (int64_t i = 0; fresh != NULL && i < count; ++i)
        cb_storage_release(fresh[i]);
    free(fresh);
    if (status != CBLOB_OK) {
        cb_blob_release(arena_blob);
        return status;
    }
    *out = arena_blob;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_arena_create(cblob_blob *const *blobs, int64_t count, cblob_part part, int64_t alignment,
                                          cblob_blob **out_arena)
{
    CB_ENTER();
    CB_REQUIRE(blobs);
    CB_REQUIRE(out_arena);
    if (count < 1)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "count is %" PRId64 ": an arena needs at least one blob", count);
    CB_TRY(cb_check_blob_array("blobs", blobs, count));
    CB_TRY(cb_check_part(part));
    CB_TRY(check_alignment(alignment, blobs[0]->dtype));
    for (int64_t i = 0; i < count; ++i)
        CB_TRY(check_member(blobs, i, part));
    size_t *offsets = cb_malloc((size_t)count * sizeof *offsets);
    if (offsets == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for an arena of %" PRId64 " blobs", count);
    int64_t elements = 0;
    cblob_status status = lay_out(blobs, count, (size_t)alignment, offsets, &elements);
    if (status == CBLOB_OK) {
        cb_context_use_threads(blobs[0]->context);
        status = make_arena(blobs, count, part, elements, offsets, out_arena);
    }
    free(offsets);
    return status;
}
