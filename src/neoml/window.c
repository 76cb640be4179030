/* SPDX-License-Identifier: BSD-2-Clause */
/* Windows: blobs that view rows of a parent along its first axis (NeoML's window blobs). A window
 * holds its parent and the parent's storages; positioning it takes the parent's current storages
 * and shape, so a window detached by a parent's reallocation re-attaches there (header,
 * "Windows"). */
#include <inttypes.h>
#include <string.h>

#include "neoml/neoml.h"
#include "status.h"

/* Points the window at `size` rows of `parent` from row `position`. Checks everything first: on
 * failure the window is unchanged. */
static cblob_status attach(cblob_blob *window, cblob_blob *parent, int64_t position, int64_t size)
{
    const cb_shape *whole = &parent->shape;
    if (whole->num_axes == 0)
        return cb_fail(CBLOB_ERR_SHAPE, "a window views its parent's first axis, and the parent has no axes");
    const int64_t rows = whole->dims[0];
    if (size < 0)
        return cb_fail(CBLOB_ERR_SHAPE, "size is %" PRId64 "; a window cannot have a negative size", size);
    if (size > rows)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "a window of %" PRId64 " rows does not fit a parent of %" PRId64 " rows",
                       size, rows);
    if (position < 0 || position > rows - size)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE,
                       "position %" PRId64 " is outside [0, %" PRId64 "] for a window of %" PRId64
                       " rows over a parent of %" PRId64 " rows",
                       position, rows - size, size, rows);
    if (window->mappings != NULL)
        return cb_fail(CBLOB_ERR_STATE, "the window has open mappings (cblob_blob_map); unmap them before moving it");
    int64_t dims[CBLOB_MAX_AXES];
    memcpy(dims, whole->dims, (size_t)whole->num_axes * sizeof dims[0]);
    dims[0] = size;
    cb_shape shape;
    CB_TRY(cb_shape_make(whole->num_axes, dims, parent->dtype->size, &shape));
    /* A parent without elements may have rows whose length does not fit; nothing is viewed then. */
    const int64_t row = whole->count == 0 ? 0 : whole->count / rows;

    for (int p = 0; p < CB_PARTS; ++p) {
        if (parent->storage[p] != NULL)
            cb_storage_retain(parent->storage[p]);
        cb_storage_release(window->storage[p]);
        window->storage[p] = parent->storage[p];
    }
    window->offset_bytes = parent->offset_bytes + (size_t)(position * row) * parent->dtype->size;
    window->shape = shape;
    window->window_position = position;
    window->window_size = size;
    window->window_elements = size * row;
    return CBLOB_OK;
}

static cblob_status require_window(const cblob_blob *window)
{
    CB_REQUIRE(window);
    if (!cb_blob_is_window(window))
        return cb_fail(CBLOB_ERR_STATE, "the blob is not a window (see cblob_window_create)");
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_window_create(cblob_blob *parent, int64_t size, cblob_blob **out_window)
{
    CB_ENTER();
    CB_REQUIRE(parent);
    CB_REQUIRE(out_window);
    cblob_blob *window;
    CB_TRY(cb_blob_new(parent->context, parent->dtype->dtype, &window));
    /* The parent is set first, so that the window is one while attach runs. */
    cb_blob_retain(parent);
    window->parent = parent;
    cblob_status status = attach(window, parent, 0, size);
    if (status != CBLOB_OK) {
        cb_blob_release(window);
        return status;
    }
    *out_window = window;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_window_set_position(cblob_blob *window, int64_t position)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    return attach(window, window->parent, position, window->window_size);
}

CBLOB_API cblob_status cblob_window_shift(cblob_blob *window, int64_t delta)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    int64_t position;
    if (__builtin_add_overflow(window->window_position, delta, &position))
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "shifting position %" PRId64 " by %" PRId64 " overflows",
                       window->window_position, delta);
    return attach(window, window->parent, position, window->window_size);
}

CBLOB_API cblob_status cblob_window_set_size(cblob_blob *window, int64_t size)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    return attach(window, window->parent, window->window_position, size);
}

CBLOB_API cblob_status cblob_window_position(const cblob_blob *window, int64_t *out_position)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    CB_REQUIRE(out_position);
    *out_position = window->window_position;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_window_size(const cblob_blob *window, int64_t *out_size)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    CB_REQUIRE(out_size);
    *out_size = window->window_size;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_window_parent(cblob_blob *window, cblob_blob **out_parent)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    CB_REQUIRE(out_parent);
    cb_blob_retain(window->parent);
    *out_parent = window->parent;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_window_owner(cblob_blob *window, cblob_blob **out_owner)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    CB_REQUIRE(out_owner);
    cblob_blob *owner = window->parent;
    while (cb_blob_is_window(owner))
        owner = owner->parent;
    cb_blob_retain(owner);
    *out_owner = owner;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_is_window(const cblob_blob *blob, int32_t *out_is_window)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_is_window);
    *out_is_window = cb_blob_is_window(blob);
    return CBLOB_OK;
}
