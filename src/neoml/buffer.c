/* SPDX-License-Identifier: BSD-2-Clause */
/* Buffers: mappings of a range of a blob (NeoML's GetBuffer / ReleaseBuffer). A part current on
 * the device is staged through host memory; otherwise the caller gets the blob's host memory.
 * Mappings of a blob form a stack (last in, first out), as NeoML's per-thread stack allocator
 * demands, but an out-of-order unmap here is an error with a message, not corruption. */
#include <inttypes.h>
#include <stdlib.h>

#include "neoml/neoml.h"
#include "alloc.h"
#include "status.h"

/* An open mapping hangs on its blob (blob.h, extensions) until it is unmapped: the blob's newest
 * is its last extension of this kind. While one is open, the blob keeps its shape and memory. */
struct cblob_buffer {
    cb_blob_extension extension;
    cblob_blob *blob; /* held until unmapped */
    cblob_part part;
    cblob_access access;
    int64_t position, count;
    void *staging;      /* the host copy of a device range; NULL when mapped directly */
    cb_storage *direct; /* held and counted while the pointer is into its host memory */
};

static cblob_status allow_mapped_change(const cb_blob_extension *extension, const cblob_blob *blob,
                                        cb_blob_change change)
{
    (void)extension;
    (void)blob;
    switch (change) {
    case CB_BLOB_RESHAPE:
    case CB_BLOB_GROW:
        return cb_fail(CBLOB_ERR_STATE, "the blob has open mappings (cblob_blob_map); unmap them before reshaping");
    case CB_BLOB_REPLACE:
        return cb_fail(CBLOB_ERR_STATE, "the blob has open mappings (cblob_blob_map); unmap them first");
    case CB_BLOB_LEND: return CBLOB_OK;
    }
    return CBLOB_OK;
}

/* No release: a mapping holds its blob, which so never goes before it. */
static const cb_extension_kind mapping_kind = {.allow = allow_mapped_change};

bool cb_blob_is_mapped(const cblob_blob *blob)
{
    return cb_blob_extension_of(blob, &mapping_kind, NULL) != NULL;
}

/* The blob's newest open mapping, NULL when none. */
static const cblob_buffer *newest_mapping(const cblob_blob *blob)
{
    const cb_blob_extension *newest = NULL;
    for (const cb_blob_extension *found = NULL; (found = cb_blob_extension_of(blob, &mapping_kind, found)) != NULL;)
        newest = found;
    return (const cblob_buffer *)newest;
}

static const char *part_name(cblob_part part)
{
    return part == CBLOB_PART_DATA ? "data" : "diff";
}

static cblob_status check_range(const cblob_blob *blob, int64_t position, int64_t count)
{
    const int64_t total = blob->shape.count;
    if (position < 0 || count < 0 || count > total || position > total - count)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE,
                       "%" PRId64 " elements from position %" PRId64 " are not within the blob's %" PRId64 " elements",
                       count, position, total);
    return CBLOB_OK;
}

/* Copies the device range into a fresh host buffer (reading from `position`, where NeoML reads
 * from element 0), or leaves it zeroed when the caller only writes. */
static cblob_status stage(cblob_blob *blob, cblob_part part, cblob_access access, int64_t position, int64_t count,
                          void **out)
{
    const size_t element = blob->dtype->size, bytes = (size_t)count * element;
    void *staging = cb_calloc(1, bytes);
    if (staging == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes to stage the range in host memory", bytes);
    if (access & CBLOB_ACCESS_READ) {
        const cb_device *device;
        void *from;
        cblob_status status = cb_place_for_read(blob, part, &device);
        if (status == CBLOB_OK)
            status = cb_blob_at(blob, part, device, false, &from);
        if (status == CBLOB_OK)
            status = device->backend->memory->copy(device, staging, (char *)from + (size_t)position * element, bytes,
                                                   CB_COPY_DEVICE_TO_HOST);
        if (status != CBLOB_OK) {
            free(staging);
            return status;
        }
    }
    *out = staging;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_map(cblob_blob *blob, cblob_part part, int64_t position, int64_t count,
                                      cblob_access access, cblob_buffer **out_buffer, void **out_ptr)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    if (access != CBLOB_ACCESS_READ && access != CBLOB_ACCESS_WRITE && access != CBLOB_ACCESS_READ_WRITE)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "access %d is not a cblob_access value (1, 2 or 3)", (int)access);
    CB_REQUIRE(out_buffer);
    CB_REQUIRE(out_ptr);
    CB_TRY(check_range(blob, position, count));
    cblob_buffer *buffer = cb_calloc(1, sizeof *buffer);
    if (buffer == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a mapping");
    *buffer = (cblob_buffer){.extension = {.kind = &mapping_kind}, .blob = blob, .part = part, .access = access,
                             .position = position, .count = count};

    void *ptr = NULL;
    cblob_status status = CBLOB_OK;
    if (count > 0 && cb_blob_head(blob, part) == CBLOB_HEAD_AT_GPU) {
        status = stage(blob, part, access, position, count, &buffer->staging);
        ptr = buffer->staging;
    } else if (count > 0) {
        void *host;
        status = cb_blob_host(blob, part, (access & CBLOB_ACCESS_WRITE) != 0, &host);
        if (status == CBLOB_OK) {
            ptr = (char *)host + (size_t)position * blob->dtype->size;
            buffer->direct = blob->storage[part];
            cb_storage_retain(buffer->direct);
            atomic_fetch_add(&buffer->direct->direct_mappings, 1);
        }
    }
    if (status != CBLOB_OK) {
        free(buffer);
        return status;
    }
    cb_blob_retain(blob);
    cb_blob_extend(blob, &buffer->extension);
    *out_buffer = buffer;
    *out_ptr = ptr;
    return CBLOB_OK;
}

/* Copies a staged range written by the caller back to the device, at the position it came from. */
static cblob_status write_back(const cblob_buffer *buffer)
{
    cblob_blob *blob = buffer->blob;
    const size_t element = blob->dtype->size;
    void *to;
    CB_TRY(cb_blob_device(blob, buffer->part, true, &to));
    const cb_device *device;
    CB_TRY(cb_context_device(blob->context, &device));
    return device->backend->memory->copy(device, (char *)to + (size_t)buffer->position * element, buffer->staging,
                                         (size_t)buffer->count * element, CB_COPY_HOST_TO_DEVICE);
}

CBLOB_API cblob_status cblob_buffer_unmap(cblob_buffer *buffer)
{
    CB_ENTER();
    CB_REQUIRE(buffer);
    cblob_blob *blob = buffer->blob;
    const cblob_buffer *top = newest_mapping(blob);
    if (top != buffer)
        return cb_fail(CBLOB_ERR_STATE,
                       "mappings close last in, first out: this one (%" PRId64 " elements of %s from %" PRId64
                       ") was opened before the blob's latest (%" PRId64 " elements of %s from %" PRId64
                       "), which must be unmapped first",
                       buffer->count, part_name(buffer->part), buffer->position, top->count, part_name(top->part),
                       top->position);
    if (buffer->staging != NULL && (buffer->access & CBLOB_ACCESS_WRITE))
        CB_TRY(write_back(buffer));
    cb_blob_unextend(blob, &buffer->extension);
    if (buffer->direct != NULL) {
        atomic_fetch_sub(&buffer->direct->direct_mappings, 1);
        cb_storage_release(buffer->direct);
    }
    free(buffer->staging);
    free(buffer);
    cb_blob_release(blob);
    return CBLOB_OK;
}
