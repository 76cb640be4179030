/* SPDX-License-Identifier: BSD-2-Clause */
/* Windows: blobs that view rows of a parent along its first axis (NeoML's window blobs). A window
 * holds its parent and the parent's storages; positioning it takes the parent's current storages
 * and shape, so a window detached by a parent's reallocation re-attaches there (header,
 * "Windows"). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "neoml/neoml.h"
#include "alloc.h"
#include "status.h"

/* What a window hangs on its blob (blob.h, extensions): the parent it views, held, and its rows.
 * `elements` is how many elements from the blob's offset on the window may use: its capacity, so
 * that no reshape takes it past its view. */
typedef struct cb_window {
    cb_blob_extension extension;
    cblob_blob *parent;
    int64_t position, size, elements;
} cb_window;

/* The parent goes to the core, which lets go of it in turn (a chain of windows in a loop). */
static cblob_blob *release_window(cb_blob_extension *extension)
{
    cblob_blob *parent = ((cb_window *)extension)->parent;
    free(extension);
    return parent;
}

static cblob_status allow_window_change(const cb_blob_extension *extension, const cblob_blob *blob,
                                        cb_blob_change change)
{
    (void)blob;
    switch (change) {
    case CB_BLOB_RESHAPE: return CBLOB_OK;
    case CB_BLOB_GROW:
        return cb_fail(CBLOB_ERR_STATE, "a window cannot grow past the %" PRId64 " elements it views",
                       ((const cb_window *)extension)->elements);
    case CB_BLOB_REPLACE:
        return cb_fail(CBLOB_ERR_STATE, "a window views its parent's memory and cannot take memory of its own");
    case CB_BLOB_LEND: return cb_fail(CBLOB_ERR_STATE, "a window views its parent's memory and cannot share it");
    }
    return CBLOB_OK;
}

static int64_t window_capacity(const cb_blob_extension *extension)
{
    return ((const cb_window *)extension)->elements;
}

static const cb_extension_kind window_kind = {
    .release = release_window,
    .allow = allow_window_change,
    .capacity = window_capacity,
};

static cb_window *window_of(const cblob_blob *blob)
{
    return (cb_window *)cb_blob_extension_of(blob, &window_kind, NULL);
}

bool cb_blob_is_window(const cblob_blob *blob)
{
    return window_of(blob) != NULL;
}

/* Points the window at `size` rows of its parent from row `position`. Checks everything first: on
 * failure the window is unchanged. */
static cblob_status attach(cblob_blob *window, int64_t position, int64_t size)
{
    cb_window *view = window_of(window);
    const cblob_blob *parent = view->parent;
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
    if (cb_blob_is_mapped(window))
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
    view->position = position;
    view->size = size;
    view->elements = size * row;
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
    /* The extension comes first, so that the window is one while attach runs. */
    cb_window *view = cb_calloc(1, sizeof *view);
    if (view == NULL) {
        cb_blob_release(window);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a window");
    }
    view->extension.kind = &window_kind;
    cb_blob_retain(parent);
    view->parent = parent;
    cb_blob_extend(window, &view->extension);
    cblob_status status = attach(window, 0, size);
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
    return attach(window, position, window_of(window)->size);
}

CBLOB_API cblob_status cblob_window_shift(cblob_blob *window, int64_t delta)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    const cb_window *view = window_of(window);
    int64_t position;
    if (__builtin_add_overflow(view->position, delta, &position))
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "shifting position %" PRId64 " by %" PRId64 " overflows",
                       view->position, delta);
    return attach(window, position, view->size);
}

CBLOB_API cblob_status cblob_window_set_size(cblob_blob *window, int64_t size)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    return attach(window, window_of(window)->position, size);
}

CBLOB_API cblob_status cblob_window_position(const cblob_blob *window, int64_t *out_position)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    CB_REQUIRE(out_position);
    *out_position = window_of(window)->position;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_window_size(const cblob_blob *window, int64_t *out_size)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    CB_REQUIRE(out_size);
    *out_size = window_of(window)->size;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_window_parent(cblob_blob *window, cblob_blob **out_parent)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    CB_REQUIRE(out_parent);
    cblob_blob *parent = window_of(window)->parent;
    cb_blob_retain(parent);
    *out_parent = parent;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_window_owner(cblob_blob *window, cblob_blob **out_owner)
{
    CB_ENTER();
    CB_TRY(require_window(window));
    CB_REQUIRE(out_owner);
    cblob_blob *owner = window_of(window)->parent;
    while (cb_blob_is_window(owner))
        owner = window_of(owner)->parent;
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
