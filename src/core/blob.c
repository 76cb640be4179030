/* SPDX-License-Identifier: BSD-2-Clause */
#include "blob.h"
#include "alloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

/* ---- lifetime ------------------------------------------------------------------------- */

cblob_status cb_check_dtype(cblob_dtype dtype, const cb_dtype_info **out)
{
    const cb_dtype_info *info = cb_dtype_find(dtype);
    if (info == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "dtype %d is not a cblob_dtype value", (int)dtype);
    *out = info;
    return CBLOB_OK;
}

cblob_status cb_blob_new(cblob_context *context, cblob_dtype dtype, cblob_blob **out)
{
    const cb_dtype_info *info = NULL;
    CB_TRY(cb_check_dtype(dtype, &info));
    cblob_blob *blob = cb_calloc(1, sizeof *blob);
    if (blob == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a blob");
    atomic_init(&blob->holders, 1);
    blob->context = context;
    cb_context_retain(context);
    blob->dtype = info;
    blob->shape.num_axes = 0;
    blob->shape.count = 0;
    *out = blob;
    return CBLOB_OK;
}

/* Frees the blob's extensions; returns the blob they held for the caller to let go of (NULL:
 * none; should several hold one, all but the last are let go of here). */
static cblob_blob *release_extensions(cblob_blob *blob)
{
    cblob_blob *held = NULL;
    for (cb_blob_extension *extension = blob->extra, *next; extension != NULL; extension = next) {
        next = extension->next;
        cblob_blob *more = extension->kind->release != NULL ? extension->kind->release(extension) : NULL;
        if (more != NULL) {
            cb_blob_release(held);
            held = more;
        }
    }
    return held;
}

void cb_blob_release(cblob_blob *blob)
{
    /* An extension may hold a blob (a window its parent): freeing the last window of a chain lets
     * go of the parents in turn, in a loop rather than a recursion as deep as the nesting. */
    while (blob != NULL && atomic_fetch_sub_explicit(&blob->holders, 1, memory_order_acq_rel) == 1) {
        cblob_blob *held = release_extensions(blob);
        for (int p = 0; p < CB_PARTS; ++p)
            cb_storage_release(blob->storage[p]);
        cb_context_release(blob->context);
        free(blob);
        blob = held;
    }
}

/* ---- extensions ------------------------------------------------------------------------- */

void cb_blob_extend(cblob_blob *blob, cb_blob_extension *extension)
{
    cb_blob_extension **last = &blob->extra;
    while (*last != NULL)
        last = &(*last)->next;
    extension->next = NULL;
    *last = extension;
}

void cb_blob_unextend(cblob_blob *blob, cb_blob_extension *extension)
{
    for (cb_blob_extension **link = &blob->extra; *link != NULL; link = &(*link)->next)
        if (*link == extension) {
            *link = extension->next;
            extension->next = NULL;
            return;
        }
}

cb_blob_extension *cb_blob_extension_of(const cblob_blob *blob, const cb_extension_kind *kind,
                                        const cb_blob_extension *after)
{
    for (cb_blob_extension *extension = after != NULL ? after->next : blob->extra; extension != NULL;
         extension = extension->next)
        if (extension->kind == kind)
            return extension;
    return NULL;
}

cblob_status cb_blob_allow(const cblob_blob *blob, cb_blob_change change)
{
    for (const cb_blob_extension *extension = blob->extra; extension != NULL; extension = extension->next)
        if (extension->kind->allow != NULL)
            CB_TRY(extension->kind->allow(extension, blob, change));
    return CBLOB_OK;
}

cblob_status cb_blob_create(cblob_context *context, cblob_dtype dtype, int32_t num_axes, const int64_t *dims,
                            cblob_blob **out_blob)
{
    CB_REQUIRE(context);
    CB_REQUIRE(out_blob);
    cblob_blob *blob;
    CB_TRY(cb_blob_new(context, dtype, &blob));
    cblob_status status = cb_blob_reshape(blob, num_axes, dims);
    if (status != CBLOB_OK) {
        cb_blob_release(blob);
        return status;
    }
    *out_blob = blob;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_create(cblob_context *context, cblob_dtype dtype, int32_t num_axes,
                                         const int64_t *shape, cblob_blob **out_blob)
{
    CB_ENTER();
    return cb_blob_create(context, dtype, num_axes, shape, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_legacy(cblob_context *context, cblob_dtype dtype, int64_t num,
                                                int64_t channels, int64_t height, int64_t width,
                                                cblob_blob **out_blob)
{
    CB_ENTER();
    const int64_t dims[4] = {num, channels, height, width};
    return cb_blob_create(context, dtype, 4, dims, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_empty(cblob_context *context, cblob_dtype dtype, cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(out_blob);
    return cb_blob_new(context, dtype, out_blob);
}

CBLOB_API cblob_status cblob_blob_retain(cblob_blob *blob)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    cb_blob_retain(blob);
    return CBLOB_OK;
}

CBLOB_API void cblob_blob_destroy(cblob_blob *blob)
{
    CB_ENTER();
    cb_blob_release(blob);
}

cblob_status cb_check_blob_array(const char *name, cblob_blob *const *blobs, int64_t count)
{
    if (count < 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "the count of %s is %" PRId64 "; it cannot be negative", name, count);
    if (count > 0 && blobs == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "%s is NULL but holds %" PRId64 " blobs", name, count);
    for (int64_t i = 0; i < count; ++i)
        if (blobs[i] == NULL)
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "%s[%" PRId64 "] is NULL", name, i);
    return CBLOB_OK;
}

/* ---- reshape ---------------------------------------------------------------------------- */

int64_t cb_blob_capacity(const cblob_blob *blob)
{
    for (const cb_blob_extension *extension = blob->extra; extension != NULL; extension = extension->next)
        if (extension->kind->capacity != NULL)
            return extension->kind->capacity(extension);
    if (blob->storage[0] == NULL)
        return 0;
    size_t bytes = blob->storage[0]->size;
    if (blob->storage[1]->size < bytes)
        bytes = blob->storage[1]->size;
    return (int64_t)((bytes - blob->offset_bytes) / blob->dtype->size);
}

size_t cb_blob_bytes(const cblob_blob *blob)
{
    return (size_t)blob->shape.count * blob->dtype->size;
}

static cblob_status plan_fresh_storage(cb_reshape *plan, size_t bytes)
{
    for (int p = 0; p < CB_PARTS; ++p) {
        cblob_status status = cb_storage_create(bytes, &plan->fresh[p]);
        if (status != CBLOB_OK) {
            cb_reshape_abandon(plan);
            return status;
        }
    }
    return CBLOB_OK;
}

cblob_status cb_reshape_prepare(const cblob_blob *blob, int32_t num_axes, const int64_t *dims, cb_reshape *plan)
{
    memset(plan, 0, sizeof *plan);
    CB_TRY(cb_shape_make(num_axes, dims, blob->dtype->size, &plan->shape));
    if (!cb_shape_equal(&plan->shape, &blob->shape))
        CB_TRY(cb_blob_allow(blob, CB_BLOB_RESHAPE));
    if (plan->shape.count <= cb_blob_capacity(blob))
        return CBLOB_OK;
    CB_TRY(cb_blob_allow(blob, CB_BLOB_GROW));
    /* Growing past capacity: fresh storage for both parts, as Caffe does. */
    return plan_fresh_storage(plan, (size_t)plan->shape.count * blob->dtype->size);
}

cblob_status cb_reshape_ensure_storage(const cblob_blob *blob, cb_reshape *plan)
{
    if (cb_reshape_storage(blob, plan, CBLOB_PART_DATA) != NULL)
        return CBLOB_OK;
    return plan_fresh_storage(plan, (size_t)plan->shape.count * blob->dtype->size);
}

cb_storage *cb_reshape_storage(const cblob_blob *blob, const cb_reshape *plan, cblob_part part)
{
    return plan->fresh[part] != NULL ? plan->fresh[part] : blob->storage[part];
}

void cb_reshape_commit(cblob_blob *blob, cb_reshape *plan)
{
    for (int p = 0; p < CB_PARTS; ++p) {
        if (plan->fresh[p] != NULL) {
            cb_storage_release(blob->storage[p]);
            blob->storage[p] = plan->fresh[p];
            plan->fresh[p] = NULL;
        }
    }
    blob->shape = plan->shape;
}

void cb_reshape_abandon(cb_reshape *plan)
{
    for (int p = 0; p < CB_PARTS; ++p) {
        cb_storage_release(plan->fresh[p]);
        plan->fresh[p] = NULL;
    }
}

/* Whether dims name the blob's shape: a reshape to it changes nothing. A blob that never had a
 * shape has no axes but count 0, where a reshape to no axes makes a scalar: not the same. */
static bool is_current_shape(const cblob_blob *blob, int32_t num_axes, const int64_t *dims)
{
    if (num_axes != blob->shape.num_axes || num_axes == 0 || dims == NULL)
        return false;
    for (int32_t i = 0; i < num_axes; ++i)
        if (dims[i] != blob->shape.dims[i])
            return false;
    return true;
}

cblob_status cb_blob_reshape(cblob_blob *blob, int32_t num_axes, const int64_t *dims)
{
    if (is_current_shape(blob, num_axes, dims))
        return CBLOB_OK;
    cb_reshape plan;
    CB_TRY(cb_reshape_prepare(blob, num_axes, dims, &plan));
    cb_reshape_commit(blob, &plan);
    return CBLOB_OK;
}

/* A reshape to the current shape, which a layer's forward makes on every call, changes nothing
 * and cannot fail: it returns before CB_ENTER, as the host pointers' hot path does (host_ptr_current). */
CBLOB_API cblob_status cblob_blob_reshape(cblob_blob *blob, int32_t num_axes, const int64_t *shape)
{
    if (blob != NULL && is_current_shape(blob, num_axes, shape))
        return CBLOB_OK;
    CB_ENTER();
    CB_REQUIRE(blob);
    return cb_blob_reshape(blob, num_axes, shape);
}

CBLOB_API cblob_status cblob_blob_reshape_legacy(cblob_blob *blob, int64_t num, int64_t channels, int64_t height,
                                                 int64_t width)
{
    const int64_t dims[4] = {num, channels, height, width};
    if (blob != NULL && is_current_shape(blob, 4, dims))
        return CBLOB_OK;
    CB_ENTER();
    CB_REQUIRE(blob);
    return cb_blob_reshape(blob, 4, dims);
}

CBLOB_API cblob_status cblob_blob_reshape_like(cblob_blob *blob, const cblob_blob *other)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(other);
    cb_shape target = other->shape; /* copied: blob and other may be the same handle */
    return cb_blob_reshape(blob, target.num_axes, target.dims);
}

/* ---- shape queries ---------------------------------------------------------------------- */

CBLOB_API cblob_status cblob_blob_dtype(const cblob_blob *blob, cblob_dtype *out_dtype)
{
    CB_GETTER_REQUIRE(blob);
    CB_GETTER_REQUIRE(out_dtype);
    *out_dtype = blob->dtype->dtype;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_num_axes(const cblob_blob *blob, int32_t *out_num_axes)
{
    CB_GETTER_REQUIRE(blob);
    CB_GETTER_REQUIRE(out_num_axes);
    *out_num_axes = blob->shape.num_axes;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_count(const cblob_blob *blob, int64_t *out_count)
{
    CB_GETTER_REQUIRE(blob);
    CB_GETTER_REQUIRE(out_count);
    *out_count = blob->shape.count;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_count_range(const cblob_blob *blob, int32_t start_axis, int32_t end_axis,
                                              int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_count);
    int32_t start, end;
    CB_TRY(cb_shape_canonical_bound(&blob->shape, start_axis, &start));
    CB_TRY(cb_shape_canonical_bound(&blob->shape, end_axis, &end));
    if (start > end)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "axis range [%d, %d) is [%d, %d), which starts after its end",
                       (int)start_axis, (int)end_axis, (int)start, (int)end);
    return cb_shape_product(&blob->shape, start, end, out_count);
}

CBLOB_API cblob_status cblob_blob_shape(const cblob_blob *blob, int32_t max_axes, int64_t *out_shape,
                                        int32_t *out_num_axes)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_num_axes);
    if (max_axes < 0)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "max_axes is %d; it cannot be negative", (int)max_axes);
    if (max_axes > 0 && out_shape == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "out_shape is NULL but max_axes is %d", (int)max_axes);
    if (max_axes > 0 && max_axes < blob->shape.num_axes)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "out_shape has room for %d axes but the blob has %d",
                       (int)max_axes, (int)blob->shape.num_axes);
    if (max_axes > 0 && blob->shape.num_axes > 0)
        memcpy(out_shape, blob->shape.dims, (size_t)blob->shape.num_axes * sizeof out_shape[0]);
    *out_num_axes = blob->shape.num_axes;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_shape_at(const cblob_blob *blob, int32_t axis, int64_t *out_dim)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_dim);
    int32_t canonical;
    CB_TRY(cb_shape_canonical_axis(&blob->shape, axis, &canonical));
    *out_dim = blob->shape.dims[canonical];
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_canonical_axis(const cblob_blob *blob, int32_t axis, int32_t *out_axis)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_axis);
    return cb_shape_canonical_axis(&blob->shape, axis, out_axis);
}

static cblob_status legacy_dim(const cblob_blob *blob, int32_t index, int64_t *out_dim)
{
    CB_REQUIRE(blob);
    CB_REQUIRE(out_dim);
    return cb_shape_legacy_dim(&blob->shape, index, out_dim);
}

CBLOB_API cblob_status cblob_blob_legacy_shape(const cblob_blob *blob, int32_t index, int64_t *out_dim)
{
    CB_ENTER();
    return legacy_dim(blob, index, out_dim);
}

CBLOB_API cblob_status cblob_blob_num(const cblob_blob *blob, int64_t *out_dim)
{
    CB_ENTER();
    return legacy_dim(blob, 0, out_dim);
}

CBLOB_API cblob_status cblob_blob_channels(const cblob_blob *blob, int64_t *out_dim)
{
    CB_ENTER();
    return legacy_dim(blob, 1, out_dim);
}

CBLOB_API cblob_status cblob_blob_height(const cblob_blob *blob, int64_t *out_dim)
{
    CB_ENTER();
    return legacy_dim(blob, 2, out_dim);
}

CBLOB_API cblob_status cblob_blob_width(const cblob_blob *blob, int64_t *out_dim)
{
    CB_ENTER();
    return legacy_dim(blob, 3, out_dim);
}

CBLOB_API cblob_status cblob_blob_shape_string(const cblob_blob *blob, char *buffer, size_t buffer_size,
                                               size_t *out_length)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    char text[CB_SHAPE_TEXT_MAX];
    cb_shape_format(&blob->shape, text, sizeof text);
    return cb_return_text(text, buffer, buffer_size, out_length);
}

CBLOB_API cblob_status cblob_blob_capacity(const cblob_blob *blob, int64_t *out_capacity)
{
    CB_GETTER_REQUIRE(blob);
    CB_GETTER_REQUIRE(out_capacity);
    *out_capacity = cb_blob_capacity(blob);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_offset(const cblob_blob *blob, int32_t num_indices, const int64_t *indices,
                                         int64_t *out_offset)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_offset);
    return cb_shape_offset(&blob->shape, num_indices, indices, out_offset);
}

CBLOB_API cblob_status cblob_blob_offset_legacy(const cblob_blob *blob, int64_t n, int64_t c, int64_t h, int64_t w,
                                                int64_t *out_offset)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_offset);
    const int64_t position[4] = {n, c, h, w};
    static const char *const names[4] = {"n", "c", "h", "w"};
    int64_t dims[4];
    for (int32_t i = 0; i < 4; ++i) {
        CB_TRY(cb_shape_legacy_dim(&blob->shape, i, &dims[i]));
        if (position[i] < 0 || position[i] >= dims[i])
            return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "%s = %" PRId64 " is outside [0, %" PRId64 ")",
                           names[i], position[i], dims[i]);
    }
    /* Only now, with every index inside (so no dim is 0), does the offset stay below a count
     * that fits; before, a shape such as {big, big, 0} could overflow it. */
    int64_t offset = 0;
    for (int32_t i = 0; i < 4; ++i)
        offset = offset * dims[i] + position[i];
    *out_offset = offset;
    return CBLOB_OK;
}

/* ---- memory ----------------------------------------------------------------------------- */

cblob_head cb_blob_head(const cblob_blob *blob, cblob_part part)
{
    return blob->storage[part] != NULL ? blob->storage[part]->head : CBLOB_HEAD_UNINITIALIZED;
}

static bool same_device(const cb_device *a, const cb_device *b)
{
    return a->backend == b->backend && a->index == b->index;
}

cblob_status cb_blob_work_device(const cblob_blob *blob, cblob_part part, const cb_device **out)
{
    cb_storage *storage = blob->storage[part];
    const cb_device *mine = cb_context_open_device(blob->context);
    if (mine == NULL || storage->dev == NULL || !same_device(mine, &storage->device)) {
        *out = &storage->device;
        return CBLOB_OK;
    }
    CB_TRY(cb_storage_follow(storage, mine));
    *out = mine;
    return CBLOB_OK;
}

cblob_status cb_blob_use_device(const cblob_blob *blob, cblob_part part, const cb_device *device)
{
    cb_storage *storage = blob->storage[part];
    if (storage->dev == NULL)
        return CBLOB_OK;
    /* Which device, not whose: `device` may be another context's (cb_blob_device_on), and a
     * blob of one context is read on the same GPU through the device of the blob written. */
    if (!same_device(&storage->device, device))
        return cb_fail(CBLOB_ERR_STATE, "the %s lives on device %d but the work runs on device %d",
                       part == CBLOB_PART_DATA ? "data" : "diff", (int)storage->device.index, (int)device->index);
    return cb_storage_follow(storage, device);
}

cblob_status cb_blob_host_moving(cblob_blob *blob, cblob_part part, bool writable, void **out)
{
    cb_storage *storage = blob->storage[part];
    if (storage == NULL) {
        *out = NULL;
        return CBLOB_OK;
    }
    if (storage->dev != NULL) {
        const cb_device *work; /* a copy back to the host follows this context's stream */
        CB_TRY(cb_blob_work_device(blob, part, &work));
    }
    const cb_device *pinning = cb_context_pinning_device(blob->context);
    void *base;
    if (writable)
        CB_TRY(cb_storage_mutable_cpu(storage, pinning, &base));
    else
        CB_TRY(cb_storage_cpu(storage, pinning, &base));
    *out = base != NULL && blob->shape.count > 0 ? (char *)base + blob->offset_bytes : NULL;
    return CBLOB_OK;
}

cblob_status cb_blob_device(cblob_blob *blob, cblob_part part, bool writable, void **out)
{
    const cb_device *device;
    CB_TRY(cb_context_device(blob->context, &device));
    return cb_blob_device_on(blob, part, device, writable, out);
}

cblob_status cb_blob_device_on(cblob_blob *blob, cblob_part part, const cb_device *device, bool writable, void **out)
{
    cb_storage *storage = blob->storage[part];
    if (storage == NULL) {
        *out = NULL;
        return CBLOB_OK;
    }
    CB_TRY(cb_blob_use_device(blob, part, device));
    void *base;
    if (writable)
        CB_TRY(cb_storage_mutable_gpu(storage, device, &base));
    else
        CB_TRY(cb_storage_gpu(storage, device, &base));
    *out = base != NULL && blob->shape.count > 0 ? (char *)base + blob->offset_bytes : NULL;
    return CBLOB_OK;
}

cblob_status cb_blob_current(const cblob_blob *blob, cblob_part part, const cb_device **place, const void **first)
{
    const cb_storage *storage = blob->storage[part];
    const void *base;
    if (storage->head == CBLOB_HEAD_AT_CPU) {
        *place = &cb_host_device;
        base = storage->host;
    } else {
        CB_TRY(cb_blob_work_device(blob, part, place));
        base = storage->dev;
    }
    *first = base != NULL ? (const char *)base + blob->offset_bytes : NULL;
    return CBLOB_OK;
}

cblob_status cb_blob_math_place(cblob_blob *blob, cblob_part part, const cb_device **place)
{
    if (blob->storage[part]->head == CBLOB_HEAD_AT_CPU) {
        *place = &cb_host_device;
        return CBLOB_OK;
    }
    return cb_context_device(blob->context, place);
}

cblob_status cb_blob_device_ready(cblob_blob *blob, cblob_part part, bool writable, void **out)
{
    CB_TRY(cb_blob_device(blob, part, writable, out));
    cb_storage *storage = blob->storage[part];
    if (storage == NULL)
        return CBLOB_OK;
    const cb_device *work;
    CB_TRY(cb_blob_work_device(blob, part, &work));
    CB_TRY(work->backend->queue->synchronize(work));
    /* The address is the caller's now: its work on it may be on any stream (storage.h). */
    if (storage->dev != NULL)
        storage->dev_escaped = true;
    return CBLOB_OK;
}

/* cpu_ptr and mutable_cpu_ptr: a host copy already current (cb_blob_host_current) is the hot
 * path of a training loop, and nothing on it can fail, so, like the pure getters
 * (CB_GETTER_REQUIRE), it runs before CB_ENTER: the store of the call's name was a third of a
 * call's cost (bench/bench_hot on an AMD EPYC VM). Everything else, a bad argument included,
 * enters the call and then checks and moves as before (host_ptr_checked), so failures name the
 * call as always. The pointer is written only on success, so out_ptr is handed straight on. */
static inline bool host_ptr_current(const cblob_blob *blob, cblob_part part, bool writable, void **out_ptr)
{
    return __builtin_expect(blob != NULL && out_ptr != NULL && cb_part_is_valid(part), 1) &&
           cb_blob_host_current(blob, part, writable, out_ptr);
}

static cblob_status host_ptr_checked(cblob_blob *blob, cblob_part part, bool writable, void **out_ptr)
{
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_REQUIRE(out_ptr);
    return cb_blob_host_moving(blob, part, writable, out_ptr);
}

CBLOB_API cblob_status cblob_blob_cpu_ptr(cblob_blob *blob, cblob_part part, const void **out_ptr)
{
    if (host_ptr_current(blob, part, false, (void **)out_ptr))
        return CBLOB_OK;
    CB_ENTER();
    return host_ptr_checked(blob, part, false, (void **)out_ptr);
}

CBLOB_API cblob_status cblob_blob_mutable_cpu_ptr(cblob_blob *blob, cblob_part part, void **out_ptr)
{
    if (host_ptr_current(blob, part, true, out_ptr))
        return CBLOB_OK;
    CB_ENTER();
    return host_ptr_checked(blob, part, true, out_ptr);
}

CBLOB_API cblob_status cblob_blob_head(const cblob_blob *blob, cblob_part part, cblob_head *out_head)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_REQUIRE(out_head);
    *out_head = cb_blob_head(blob, part);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_read_element(cblob_blob *blob, cblob_part part, int32_t num_indices,
                                               const int64_t *indices, double *out_value)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_REQUIRE(out_value);
    int64_t offset;
    CB_TRY(cb_shape_offset(&blob->shape, num_indices, indices, &offset));
    if (blob->shape.count == 0)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "the blob has no elements");
    void *base;
    CB_TRY(cb_blob_host(blob, part, false, &base));
    double value = 0;
    switch (blob->dtype->dtype) {
#define CB_READ_AS_DOUBLE(ENUM, CTYPE, SUFFIX) \
    case ENUM: \
        value = (double)((const CTYPE *)base)[offset]; \
        break;
        CB_FOR_EACH_DTYPE(CB_READ_AS_DOUBLE)
#undef CB_READ_AS_DOUBLE
    }
    *out_value = value;
    return CBLOB_OK;
}

/* ---- external buffers and sharing ------------------------------------------------------- */

/* Whether ptr lies in a host buffer the storage allocated (and so will free) itself. */
static bool inside_owned_host(const cb_storage *storage, const void *ptr)
{
    if (storage == NULL || !storage->host_owned || storage->host == NULL)
        return false;
    const uintptr_t start = (uintptr_t)storage->host, at = (uintptr_t)ptr;
    return at >= start && at - start < storage->size;
}

CBLOB_API cblob_status cblob_blob_set_cpu_data(cblob_blob *blob, void *ptr, size_t size_bytes,
                                               cblob_release_fn release, void *user_data)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(ptr);
    CB_TRY(cb_blob_check_external(blob, size_bytes));
    CB_TRY(cb_blob_check_unexported(blob, false));
    /* Caffe frees its owned buffer and keeps the pointer it was given: a dangling one if the
     * caller passed that buffer back. */
    for (int p = 0; p < CB_PARTS; ++p)
        if (inside_owned_host(blob->storage[p], ptr))
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                           "ptr points into the blob's own %s buffer, which cblob allocated and frees itself",
                           p == CBLOB_PART_DATA ? "data" : "diff");
    CB_TRY(cb_blob_exact_storage(blob));
    cb_storage_set_cpu(blob->storage[CBLOB_PART_DATA], ptr, (cb_release){release, user_data});
    return CBLOB_OK;
}

cblob_status cb_blob_check_external(const cblob_blob *blob, size_t size_bytes)
{
    const size_t needed = cb_blob_bytes(blob);
    if (needed == 0)
        return cb_fail(CBLOB_ERR_SHAPE, "the blob has no elements for a buffer to hold");
    if (size_bytes < needed)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "size_bytes is %zu but %" PRId64 " %s elements need %zu",
                       size_bytes, blob->shape.count, blob->dtype->name, needed);
    CB_TRY(cb_blob_allow(blob, CB_BLOB_REPLACE));
    if (blob->storage[CBLOB_PART_DATA] != NULL && atomic_load(&blob->storage[CBLOB_PART_DATA]->direct_mappings) > 0)
        return cb_fail(CBLOB_ERR_STATE, "the data has open mappings (cblob_blob_map); unmap them first");
    return CBLOB_OK;
}

cblob_status cb_blob_check_unexported(const cblob_blob *blob, bool device)
{
    const cb_storage *data = blob->storage[CBLOB_PART_DATA];
    const int exports = data == NULL ? 0 : atomic_load(device ? &data->dev_exports : &data->host_exports);
    if (exports > 0)
        return cb_fail(CBLOB_ERR_STATE,
                       "the data's %s memory is exported as %d DLPack tensor%s; they must be deleted before the "
                       "buffer is replaced",
                       device ? "device" : "host", exports, exports == 1 ? "" : "s");
    return CBLOB_OK;
}

cblob_status cb_blob_exact_storage(cblob_blob *blob)
{
    const size_t needed = cb_blob_bytes(blob);
    if (blob->storage[CBLOB_PART_DATA] != NULL && blob->storage[CBLOB_PART_DATA]->size == needed)
        return CBLOB_OK;
    /* Caffe replaces data and diff with storage of exactly count elements first. */
    cb_storage *fresh[CB_PARTS] = {NULL, NULL};
    for (int p = 0; p < CB_PARTS; ++p) {
        cblob_status status = cb_storage_create(needed, &fresh[p]);
        if (status != CBLOB_OK) {
            cb_storage_release(fresh[0]);
            return status;
        }
    }
    for (int p = 0; p < CB_PARTS; ++p) {
        cb_storage_release(blob->storage[p]);
        blob->storage[p] = fresh[p];
    }
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_share(cblob_blob *blob, cblob_blob *other, cblob_part part)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(other);
    CB_TRY(cb_check_part(part));
    if (blob->dtype != other->dtype)
        return cb_fail(CBLOB_ERR_DTYPE, "cannot share memory between a %s blob and a %s blob",
                       blob->dtype->name, other->dtype->name);
    if (blob->shape.count != other->shape.count)
        return cb_fail(CBLOB_ERR_SHAPE, "counts differ: %" PRId64 " here, %" PRId64 " in other",
                       blob->shape.count, other->shape.count);
    if (other->storage[part] == NULL)
        return cb_fail(CBLOB_ERR_STATE, "other has no storage to share (it has never had elements)");
    CB_TRY(cb_blob_allow(other, CB_BLOB_LEND));
    CB_TRY(cb_blob_allow(blob, CB_BLOB_REPLACE));
    if (blob->storage[part] == other->storage[part])
        return CBLOB_OK;
    /* A blob that never had storage gets its other part too, so that both parts always exist
     * together and capacity stays well defined. Made first: a failure must change nothing. */
    cb_storage *companion = NULL;
    if (blob->storage[1 - part] == NULL)
        CB_TRY(cb_storage_create(other->storage[part]->size, &companion));
    cb_storage_retain(other->storage[part]);
    cb_storage_release(blob->storage[part]);
    blob->storage[part] = other->storage[part];
    if (companion != NULL)
        blob->storage[1 - part] = companion;
    return CBLOB_OK;
}
