/* SPDX-License-Identifier: BSD-2-Clause */
/* Merge and split along an axis (NeoML's MergeByDim / SplitByDim) and by object (MergeByObject /
 * SplitByObject). Both see the whole blob as `rows` rows of `width` elements, each row the
 * concatenation of one row of every piece: piece i holds widths[i] elements of each row. Every
 * dimension is checked before anything moves, so a mismatch is an error and never an
 * out-of-bounds copy. */
#include <inttypes.h>
#include <stdlib.h>

#include "core/run_kernels.h"
#include "alloc.h"
#include "neoml/neoml.h"
#include "status.h"
#include "threads.h"

typedef enum cb_direction { CB_MERGE, CB_SPLIT } cb_direction;

/* The names merge and split give their lists in messages. */
static const char *list_name(cb_direction direction)
{
    return direction == CB_MERGE ? "inputs" : "outputs";
}

typedef struct cb_piece {
    int64_t width; /* elements of each row of the whole blob that this piece holds */
    void *view;    /* the piece's part where the copy runs */
} cb_piece;

typedef struct cb_layout {
    int64_t rows, width;
    cb_piece *pieces; /* one per piece, allocated by check_list */
} cb_layout;

static cblob_status check_list(const cblob_blob *whole, int32_t num, cblob_blob *const *pieces,
                               cb_direction direction, cb_layout *layout)
{
    const char *name = list_name(direction);
    if (num < 1)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "num_%s is %d; at least one blob is needed", name, (int)num);
    CB_TRY(cb_check_blob_array(name, pieces, num));
    for (int32_t i = 0; i < num; ++i) {
        if (pieces[i]->dtype != whole->dtype)
            return cb_fail(CBLOB_ERR_DTYPE, "%s[%d] is %s but the blob is %s", name, (int)i, pieces[i]->dtype->name,
                           whole->dtype->name);
    }
    layout->pieces = cb_calloc((size_t)num, sizeof layout->pieces[0]);
    if (layout->pieces == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to track %d blobs", (int)num);
    return CBLOB_OK;
}

/* The layout along `axis`: every piece matches the whole on every other axis, and the pieces'
 * dimensions on `axis` add up to the whole's. */
static cblob_status axis_layout(const cblob_blob *whole, int32_t axis, int32_t num, cblob_blob *const *pieces,
                                cb_direction direction, cb_layout *layout)
{
    const char *name = list_name(direction);
    const cb_shape *shape = &whole->shape;
    int64_t total = 0;
    for (int32_t i = 0; i < num; ++i) {
        const cb_shape *piece = &pieces[i]->shape;
        if (piece->num_axes != shape->num_axes)
            return cb_fail(CBLOB_ERR_SHAPE, "%s[%d] has %d axes but the blob has %d", name, (int)i,
                           (int)piece->num_axes, (int)shape->num_axes);
        for (int32_t j = 0; j < shape->num_axes; ++j)
            if (j != axis && piece->dims[j] != shape->dims[j])
                return cb_fail(CBLOB_ERR_SHAPE, "%s[%d] is %" PRId64 " on axis %d where the blob is %" PRId64
                               " (only axis %d may differ)", name, (int)i, piece->dims[j], (int)j, shape->dims[j],
                               (int)axis);
        if (__builtin_add_overflow(total, piece->dims[axis], &total))
            return cb_fail(CBLOB_ERR_SHAPE, "the %s' dimensions on axis %d add up to more than 64 bits hold", name,
                           (int)axis);
    }
    if (total != shape->dims[axis])
        return cb_fail(CBLOB_ERR_SHAPE, "the %s add up to %" PRId64 " on axis %d but the blob has %" PRId64, name, total,
                       (int)axis, shape->dims[axis]);
    if (shape->count == 0)
        return CBLOB_OK; /* no rows: nothing to copy, and the products below might not fit */
    int64_t inner;
    CB_TRY(cb_shape_product(shape, 0, axis, &layout->rows));
    CB_TRY(cb_shape_product(shape, axis + 1, shape->num_axes, &inner));
    layout->width = shape->dims[axis] * inner;
    for (int32_t i = 0; i < num; ++i)
        layout->pieces[i].width = pieces[i]->shape.dims[axis] * inner;
    return CBLOB_OK;
}

/* The layout by object: every blob has 7 axes and the whole's BatchLength, BatchWidth and
 * ListSize, and the pieces' object sizes add up to the whole's. */
static cblob_status object_layout(const cblob_blob *whole, int32_t num, cblob_blob *const *pieces,
                                  cb_direction direction, cb_layout *layout)
{
    const char *name = list_name(direction);
    const cb_shape *shape = &whole->shape;
    int64_t total = 0;
    for (int32_t i = 0; i < num; ++i) {
        const cb_shape *piece = &pieces[i]->shape;
        if (piece->num_axes != CBLOB_NEOML_AXES)
            return cb_fail(CBLOB_ERR_SHAPE, "%s[%d] has %d axes; a NeoML blob has %d", name, (int)i,
                           (int)piece->num_axes, CBLOB_NEOML_AXES);
        for (int32_t j = CBLOB_DIM_BATCH_LENGTH; j < CBLOB_DIM_HEIGHT; ++j)
            if (piece->dims[j] != shape->dims[j])
                return cb_fail(CBLOB_ERR_SHAPE, "%s[%d] is %" PRId64 " on axis %d where the blob is %" PRId64
                               " (objects are joined, so BatchLength, BatchWidth and ListSize must match)", name,
                               (int)i, piece->dims[j], (int)j, shape->dims[j]);
        int64_t size;
        CB_TRY(cb_shape_product(piece, CBLOB_DIM_HEIGHT, CBLOB_NEOML_AXES, &size));
        if (__builtin_add_overflow(total, size, &total))
            return cb_fail(CBLOB_ERR_SHAPE, "the %s' object sizes add up to more than 64 bits hold", name);
        layout->pieces[i].width = size;
    }
    int64_t size;
    CB_TRY(cb_shape_product(shape, CBLOB_DIM_HEIGHT, CBLOB_NEOML_AXES, &size));
    if (total != size)
        return cb_fail(CBLOB_ERR_SHAPE, "the %s' object sizes add up to %" PRId64 " but the blob's is %" PRId64, name,
                       total, size);
    if (shape->count == 0) {
        for (int32_t i = 0; i < num; ++i)
            layout->pieces[i].width = 0;
        return CBLOB_OK;
    }
    layout->width = size;
    return cb_shape_product(shape, CBLOB_DIM_BATCH_LENGTH, CBLOB_DIM_HEIGHT, &layout->rows);
}

/* Refuses pieces that share memory with the whole and, when splitting, with each other: the
 * result would depend on the order of the copies. */
static cblob_status check_overlap(const cblob_blob *whole, cblob_part part, int32_t num, cblob_blob *const *pieces,
                                  cb_direction direction)
{
    const char *name = list_name(direction);
    for (int32_t i = 0; i < num; ++i) {
        if (cb_parts_overlap(pieces[i], part, whole, part))
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "%s[%d] shares memory with the blob", name, (int)i);
        for (int32_t j = 0; direction == CB_SPLIT && j < i; ++j)
            if (cb_parts_overlap(pieces[i], part, pieces[j], part))
                return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "%s[%d] and %s[%d] share memory", name, (int)j, name, (int)i);
    }
    return CBLOB_OK;
}

/* How many rows of the whole blob the host copies at a time, every piece's share of them before
 * the next rows. One row at a time writes a merge's output (and reads a split's input) straight
 * through, which the hardware prefetchers follow: for 256-byte shares bench/bench_neoml measured
 * 1.0x memcpy one row at a time, 0.6x two rows at a time, and 0.5x for one pass per piece over
 * the whole blob. Only shares so narrow that the kernel call costs more than the copy take
 * several rows per call, enough for CB_MIN_COPY_BYTES. */
#define CB_MIN_COPY_BYTES 256

static int64_t band_rows(const cb_layout *layout, int32_t num, size_t element)
{
    int64_t narrowest = layout->width;
    for (int32_t i = 0; i < num; ++i)
        if (layout->pieces[i].width > 0 && layout->pieces[i].width < narrowest)
            narrowest = layout->pieces[i].width;
    const int64_t bytes = narrowest * (int64_t)element;
    return bytes >= CB_MIN_COPY_BYTES ? 1 : (CB_MIN_COPY_BYTES + bytes - 1) / bytes;
}

/* Copies `rows` rows from row `first` between the whole blob and every piece. */
static cblob_status copy_band(const cblob_blob *whole, void *whole_view, int32_t num, const cb_layout *layout,
                              cb_direction direction, const cb_device *place, int64_t first, int64_t rows)
{
    const cblob_dtype dtype = whole->dtype->dtype;
    const size_t element = whole->dtype->size;
    int64_t column = 0;
    for (int32_t i = 0; i < num; ++i) {
        const int64_t width = layout->pieces[i].width;
        if (width == 0)
            continue;
        char *slice = (char *)whole_view + (size_t)(first * layout->width + column) * element;
        char *view = (char *)layout->pieces[i].view + (size_t)(first * width) * element;
        if (direction == CB_MERGE)
            CB_TRY(cb_run_copy_strided(place, dtype, rows * width, rows, width, view, width, slice, layout->width));
        else
            CB_TRY(cb_run_copy_strided(place, dtype, rows * width, rows, width, slice, layout->width, view, width));
        column += width;
    }
    return CBLOB_OK;
}

/* Bands of `rows` rows: the work threads take apart. */
typedef struct cb_bands {
    const cblob_blob *whole;
    void *whole_view;
    int32_t num;
    const cb_layout *layout;
    cb_direction direction;
    const cb_device *place;
    int64_t rows;
} cb_bands;

static cblob_status copy_bands(void *arg, int64_t begin, int64_t end)
{
    const cb_bands *bands = arg;
    for (int64_t band = begin; band < end; ++band) {
        const int64_t first = band * bands->rows;
        const int64_t rows = bands->layout->rows - first < bands->rows ? bands->layout->rows - first : bands->rows;
        CB_TRY(copy_band(bands->whole, bands->whole_view, bands->num, bands->layout, bands->direction, bands->place,
                         first, rows));
    }
    return CBLOB_OK;
}

/* Moves the rows once the layout is known. Every view is taken before the first copy, so a
 * failure to reach one (memory, device) leaves every blob's values as they were. */
static cblob_status copy_pieces(cblob_blob *whole, cblob_part part, int32_t num, cblob_blob *const *pieces,
                                cb_direction direction, const cb_layout *layout)
{
    if (layout->rows == 0 || layout->width == 0)
        return CBLOB_OK;
    const bool merging = direction == CB_MERGE;
    const cb_device *place;
    if (merging)
        CB_TRY(cb_place_for_write(whole, part, &place));
    else
        CB_TRY(cb_place_for_read(whole, part, &place));
    for (int32_t i = 0; i < num; ++i)
        if (layout->pieces[i].width > 0)
            CB_TRY(cb_blob_at(pieces[i], part, place, !merging, &layout->pieces[i].view));
    void *whole_view;
    CB_TRY(cb_blob_at(whole, part, place, merging, &whole_view));

    /* A device gets each piece in one launch: the order of its writes does not matter there. On
     * the host, threads take bands apart (each writes rows of its own). */
    const size_t element = whole->dtype->size;
    cb_bands bands = {whole, whole_view, num, layout, direction, place,
                      cb_device_is_host(place) ? band_rows(layout, num, element) : layout->rows};
    const int64_t count = (layout->rows + bands.rows - 1) / bands.rows;
    return cb_parallel_for(count, (size_t)(bands.rows * layout->width) * element * 2, 1, copy_bands, &bands);
}

/* axis: a canonical axis, or -1 for the object form. */
static cblob_status merge_or_split(cblob_blob *whole, cblob_part part, int32_t axis, int32_t num,
                                   cblob_blob *const *pieces, cb_direction direction)
{
    cb_layout layout = {0, 0, NULL};
    cblob_status status = check_list(whole, num, pieces, direction, &layout);
    if (status == CBLOB_OK)
        status = axis < 0 ? object_layout(whole, num, pieces, direction, &layout)
                          : axis_layout(whole, axis, num, pieces, direction, &layout);
    if (status == CBLOB_OK)
        status = check_overlap(whole, part, num, pieces, direction);
    if (status == CBLOB_OK)
        status = copy_pieces(whole, part, num, pieces, direction, &layout);
    free(layout.pieces);
    return status;
}

static cblob_status by_axis(cblob_blob *blob, cblob_part part, int32_t axis, int32_t num, cblob_blob *const *pieces,
                            cb_direction direction)
{
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    int32_t canonical;
    CB_TRY(cb_shape_canonical_axis(&blob->shape, axis, &canonical));
    return merge_or_split(blob, part, canonical, num, pieces, direction);
}

static cblob_status by_object(cblob_blob *blob, cblob_part part, int32_t num, cblob_blob *const *pieces,
                              cb_direction direction)
{
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_TRY(cb_require_neoml(blob, "blob"));
    return merge_or_split(blob, part, -1, num, pieces, direction);
}

CBLOB_API cblob_status cblob_blob_merge(cblob_blob *blob, cblob_part part, int32_t axis, int32_t num_inputs,
                                        cblob_blob *const *inputs)
{
    CB_ENTER();
    return by_axis(blob, part, axis, num_inputs, inputs, CB_MERGE);
}

CBLOB_API cblob_status cblob_blob_split(cblob_blob *blob, cblob_part part, int32_t axis, int32_t num_outputs,
                                        cblob_blob *const *outputs)
{
    CB_ENTER();
    return by_axis(blob, part, axis, num_outputs, outputs, CB_SPLIT);
}

CBLOB_API cblob_status cblob_blob_merge_objects(cblob_blob *blob, cblob_part part, int32_t num_inputs,
                                                cblob_blob *const *inputs)
{
    CB_ENTER();
    return by_object(blob, part, num_inputs, inputs, CB_MERGE);
}

CBLOB_API cblob_status cblob_blob_split_objects(cblob_blob *blob, cblob_part part, int32_t num_outputs,
                                                cblob_blob *const *outputs)
{
    CB_ENTER();
    return by_object(blob, part, num_outputs, outputs, CB_SPLIT);
}
