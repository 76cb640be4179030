/* SPDX-License-Identifier: BSD-2-Clause */
/* Blobs: Caffe's Blob. A shape over two storages (data and diff), the lazily synced memories.
 * The functions here are what other parts of the core (formats, NeoML operations, DLPack) build
 * on; the public entry points are in blob.c and blob_math.c. */
#ifndef CBLOB_SRC_BLOB_H
#define CBLOB_SRC_BLOB_H

#include <stdatomic.h>
#include <stdbool.h>

#include "cblob/cblob.h"
#include "context.h"
#include "core/enums.h"
#include "shape.h"
#include "storage.h"

#define CB_PARTS 2

struct cblob_blob {
    atomic_int holders;
    cblob_context *context;
    const cb_dtype_info *dtype;
    cb_shape shape;
    /* data and diff; both NULL while the blob has never had a non-zero count (Caffe allocates no
     * SyncedMemory then either). */
    cb_storage *storage[CB_PARTS];
    /* Where this blob's first element sits in its storages: non-zero only for windows, which
     * view part of a parent's storages. */
    size_t offset_bytes;
    /* Windows (src/neoml/window.c): the blob this one views, held; NULL for a blob that is not a
     * window. window_elements is how many elements from offset_bytes on the window may use: its
     * capacity, so that no reshape takes it past its view. */
    cblob_blob *parent;
    int64_t window_position, window_size, window_elements;
    /* The most recent open mapping (src/neoml/buffer.c), NULL when none: mappings close last in,
     * first out, and while one is open the blob keeps its shape and storage. */
    struct cblob_buffer *mappings;
    /* Arenas (src/comm/arena.c): the members of the buffer this blob is, NULL for other blobs. */
    struct cb_param_arena *arena;
};

/* A new blob with no axes, count 0 and no storage (Caffe's default Blob). */
cblob_status cb_blob_new(cblob_context *context, cblob_dtype dtype, cblob_blob **out);
/* A new blob of the given shape (Caffe's Blob(shape)); nothing is allocated until first access. */
cblob_status cb_blob_create(cblob_context *context, cblob_dtype dtype, int32_t num_axes, const int64_t *dims,
                            cblob_blob **out);
void cb_blob_release(cblob_blob *blob);

static inline void cb_blob_retain(cblob_blob *blob)
{
    atomic_fetch_add_explicit(&blob->holders, 1, memory_order_relaxed);
}

/* CBLOB_ERR_INVALID_ARGUMENT unless `blobs` holds `count` (>= 0) non-NULL handles; `name` names
 * the array in the message. */
cblob_status cb_check_blob_array(const char *name, cblob_blob *const *blobs, int64_t count);

/* The row of a valid dtype, or CBLOB_ERR_INVALID_ARGUMENT naming the bad value. */
cblob_status cb_check_dtype(cblob_dtype dtype, const cb_dtype_info **out);

static inline bool cb_blob_is_window(const cblob_blob *blob)
{
    return blob->parent != NULL;
}

/* Elements the blob's storages can hold from its offset on (0 without storage). */
int64_t cb_blob_capacity(const cblob_blob *blob);
size_t cb_blob_bytes(const cblob_blob *blob);

/* A reshape in two steps, so that callers which fill the new storage (copy_from, proto loading)
 * can fail half-way and leave the blob exactly as it was: prepare makes the new storages when
 * the count grows past capacity, without touching the blob; commit installs them and the shape;
 * abandon drops them. */
typedef struct cb_reshape {
    cb_shape shape;
    cb_storage *fresh[CB_PARTS]; /* NULL: the blob's current storage is kept */
} cb_reshape;

cblob_status cb_reshape_prepare(const cblob_blob *blob, int32_t num_axes, const int64_t *dims, cb_reshape *plan);
/* Gives a blob that never had memory (its count was always 0) storages of no bytes in the plan,
 * so that a head can move, as Caffe's accessors move it on the storage Caffe would have. */
cblob_status cb_reshape_ensure_storage(const cblob_blob *blob, cb_reshape *plan);
/* The storage a part will have once the plan is committed. */
cb_storage *cb_reshape_storage(const cblob_blob *blob, const cb_reshape *plan, cblob_part part);
void cb_reshape_commit(cblob_blob *blob, cb_reshape *plan);
void cb_reshape_abandon(cb_reshape *plan);
cblob_status cb_blob_reshape(cblob_blob *blob, int32_t num_axes, const int64_t *dims);

/* Host and device views of a part, with the blob's offset applied; NULL for a blob without
 * elements. They move the storage's head exactly as Caffe's accessors do. */
cblob_status cb_blob_host_moving(cblob_blob *blob, cblob_part part, bool writable, void **out);
/* cb_blob_host's common case inline: a host copy already current (head AT_CPU, or SYNCED for a
 * read) moves nothing and copies nothing, so it needs neither the device's stream nor an
 * allocation. (A later copy to or from a device is made by the accessors that set its stream.) */
static inline cblob_status cb_blob_host(cblob_blob *blob, cblob_part part, bool writable, void **out)
{
    cb_storage *storage = blob->storage[part];
    if (__builtin_expect(storage != NULL && (storage->head == CBLOB_HEAD_AT_CPU ||
                                             (storage->head == CBLOB_HEAD_SYNCED && !writable)), 1)) {
        *out = storage->host != NULL && blob->shape.count > 0 ? (char *)storage->host + blob->offset_bytes : NULL;
        return CBLOB_OK;
    }
    return cb_blob_host_moving(blob, part, writable, out);
}
cblob_status cb_blob_device(cblob_blob *blob, cblob_part part, bool writable, void **out);
/* cb_blob_device for a pointer handed out of the library (gpu_ptr, DLPack), which its holder may
 * use on any stream: returned once the work cblob queued on the memory (a zero-fill of new
 * memory, kernels, copies) has finished. The memory is marked escaped: it is freed after a
 * device-wide wait (storage.h). */
cblob_status cb_blob_device_ready(cblob_blob *blob, cblob_part part, bool writable, void **out);
/* cb_blob_device on a given device rather than the blob's context's: operations on several blobs
 * run all of them on the device of the one they write. */
cblob_status cb_blob_device_on(cblob_blob *blob, cblob_part part, const cb_device *device, bool writable, void **out);

/* The device to run work on a part's device copy with: the context's own (its stream and its
 * log) when the copy lives on it, else the device the copy was made on. Work on a memory follows
 * the stream of the context that asks for it, after what other streams queued on it so far
 * (cb_storage_follow). The part must have storage. */
cblob_status cb_blob_work_device(const cblob_blob *blob, cblob_part part, const cb_device **out);
/* Fails with CBLOB_ERR_STATE when the part's device copy lives on another device than `device`
 * (an opened one: the blob's context's, or another context's on the same GPU); otherwise makes
 * `device` the copy's user as cb_blob_work_device does. The part must have storage. */
cblob_status cb_blob_use_device(const cblob_blob *blob, cblob_part part, const cb_device *device);

/* Caller buffers (set_cpu_data, set_gpu_data): the checks, which change nothing, and Caffe's size
 * rule, which gives data and diff fresh storage of exactly count elements unless data has it. */
cblob_status cb_blob_check_external(const cblob_blob *blob, size_t size_bytes);
/* CBLOB_ERR_STATE while a DLPack tensor views the data's host buffer (device buffer with
 * `device`), which a caller buffer would replace under it. */
cblob_status cb_blob_check_unexported(const cblob_blob *blob, bool device);
cblob_status cb_blob_exact_storage(cblob_blob *blob);

/* The head of a part (UNINITIALIZED for a blob without storage). */
cblob_head cb_blob_head(const cblob_blob *blob, cblob_part part);

/* Whether a part was never read or written (Caffe's math does nothing to it, sums give 0). */
static inline bool cb_blob_never_accessed(const cblob_blob *blob, cblob_part part)
{
    return cb_blob_head(blob, part) == CBLOB_HEAD_UNINITIALIZED;
}

#endif
