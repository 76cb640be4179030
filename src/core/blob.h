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

/* What an upper layer hangs on a blob (ggml's `extra`): NeoML's windows and open mappings
 * (src/neoml), an arena's members (src/comm). The core names none of them: it keeps a blob's
 * extensions in a chain, oldest first, lets each go with the blob, and asks each before the blob's
 * shape or memory changes. An extension is a struct of the upper layer's whose first member is a
 * cb_blob_extension; its kind (one static table per kind of extension) says what it does. */
typedef struct cb_blob_extension cb_blob_extension;

/* A change the core is about to make to a blob, which an extension may refuse. */
typedef enum cb_blob_change {
    CB_BLOB_RESHAPE, /* another shape, within the blob's capacity */
    CB_BLOB_GROW,    /* another shape past it: fresh storage */
    CB_BLOB_REPLACE, /* a part's memory replaced by memory from elsewhere: a caller's buffer
                        (set_cpu_data, set_gpu_data), another blob's storage (share), a slice of
                        another blob's (an arena) */
    CB_BLOB_LEND,    /* the blob's storage given to another blob as well (share's `other`) */
} cb_blob_change;

typedef struct cb_extension_kind {
    /* Frees the extension as its blob goes (NULL: the extension holds the blob, so it never does).
     * Returns a blob the extension held, for the core to let go of in turn (NULL: none), so that
     * chains of blobs holding blobs unwind in a loop, not a recursion as deep as the chain. */
    cblob_blob *(*release)(cb_blob_extension *extension);
    /* CBLOB_OK when the blob may undergo `change`, else fails saying why (NULL: every change). */
    cblob_status (*allow)(const cb_blob_extension *extension, const cblob_blob *blob, cb_blob_change change);
    /* The elements the blob may use from its offset on, when fewer than its storages hold (NULL:
     * no limit of the extension's). */
    int64_t (*capacity)(const cb_blob_extension *extension);
} cb_extension_kind;

struct cb_blob_extension {
    const cb_extension_kind *kind;
    cb_blob_extension *next;
};

struct cblob_blob {
    atomic_int holders;
    cblob_context *context;
    const cb_dtype_info *dtype;
    cb_shape shape;
    /* data and diff; both NULL while the blob has never had a non-zero count (Caffe allocates no
     * SyncedMemory then either). */
    cb_storage *storage[CB_PARTS];
    /* Where this blob's first element sits in its storages: non-zero only for a blob that views
     * part of another's storages (a NeoML window, whose extension also limits its capacity). */
    size_t offset_bytes;
    /* The extensions upper layers hung on the blob, oldest first; NULL when none. */
    cb_blob_extension *extra;
};

/* Hangs an extension on the blob (last of its chain), or takes it off; the caller frees it. */
void cb_blob_extend(cblob_blob *blob, cb_blob_extension *extension);
void cb_blob_unextend(cblob_blob *blob, cb_blob_extension *extension);
/* The blob's first extension of a kind (`after` NULL), or the next one after `after`; NULL when
 * there is none. */
cb_blob_extension *cb_blob_extension_of(const cblob_blob *blob, const cb_extension_kind *kind,
                                        const cb_blob_extension *after);
/* Asks every extension of the blob whether it may undergo `change`: the first refusal's status and
 * message, or CBLOB_OK. */
cblob_status cb_blob_allow(const cblob_blob *blob, cb_blob_change change);

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
 * allocation, and cannot fail. (A later copy to or from a device is made by the accessors that set
 * its stream.) cb_blob_host_current is that case alone: false, writing nothing, where the host
 * copy must move. */
static inline bool cb_blob_host_current(const cblob_blob *blob, cblob_part part, bool writable, void **out)
{
    const cb_storage *storage = blob->storage[part];
    if (__builtin_expect(storage != NULL && (storage->head == CBLOB_HEAD_AT_CPU ||
                                             (storage->head == CBLOB_HEAD_SYNCED && !writable)), 1)) {
        *out = storage->host != NULL && blob->shape.count > 0 ? (char *)storage->host + blob->offset_bytes : NULL;
        return true;
    }
    return false; /* out untouched */
}
static inline cblob_status cb_blob_host(cblob_blob *blob, cblob_part part, bool writable, void **out)
{
    if (cb_blob_host_current(blob, part, writable, out))
        return CBLOB_OK;
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
/* A part's view at a place: its host copy at the host device (cb_blob_host), its device copy on a
 * device of a GPU backend (cb_blob_device_on). */
static inline cblob_status cb_blob_at(cblob_blob *blob, cblob_part part, const cb_device *place, bool writable,
                                      void **out)
{
    return cb_device_is_host(place) ? cb_blob_host(blob, part, writable, out)
                                    : cb_blob_device_on(blob, part, place, writable, out);
}

/* Where Caffe's blob math runs on a part (conformance.md 1.E-1.F): where its current copy is,
 * without moving anything. cb_blob_current is for reading (the sums of a const blob): the host
 * when the head is AT_CPU, else the device that works on the device copy (cb_blob_work_device),
 * and the copy's first element there (NULL without elements). cb_blob_math_place is for writing
 * (update, scale): the host when the head is AT_CPU, else the context's device, whose accessors
 * (cb_blob_at) then move the heads as Caffe's mutable accessors do. The part must have storage. */
cblob_status cb_blob_current(const cblob_blob *blob, cblob_part part, const cb_device **place, const void **first);
cblob_status cb_blob_math_place(cblob_blob *blob, cblob_part part, const cb_device **place);

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
