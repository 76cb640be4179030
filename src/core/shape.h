/* SPDX-License-Identifier: BSD-2-Clause */
/* Shapes: validation with overflow checks, axis canonicalisation, Caffe's legacy view. */
#ifndef CBLOB_SRC_SHAPE_H
#define CBLOB_SRC_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"

typedef struct cb_shape {
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    int64_t count;
} cb_shape;

/* Checks and builds a shape: 0..CBLOB_MAX_AXES axes, every dim >= 0, and a count whose byte
 * size (count * element_size) fits in a ptrdiff_t. A shape with a zero dim has count 0 whatever
 * its other dims are (Caffe's guard is skipped after a zero). */
cblob_status cb_shape_make(int32_t num_axes, const int64_t *dims, size_t element_size, cb_shape *out);

bool cb_shape_equal(const cb_shape *a, const cb_shape *b);

/* CBLOB_ERR_SHAPE, showing both shapes, unless `shape` equals `other`'s (`name` names other). */
cblob_status cb_shape_require_equal(const cb_shape *shape, const cb_shape *other, const char *name);

/* The product of dims [from, to): 1 for an empty range, 0 when any dim in it is 0 (whatever the
 * others are, as for counts), and CBLOB_ERR_OVERFLOW when it does not fit in 64 bits. */
cblob_status cb_shape_product(const cb_shape *shape, int32_t from, int32_t to, int64_t *out);

/* Room for cb_shape_format's text of any shape: 32 dims of 20 digits and a space, plus the count. */
#define CB_SHAPE_TEXT_MAX (CBLOB_MAX_AXES * 21 + 24)

/* Caffe's CanonicalAxisIndex: [-num_axes, num_axes) to [0, num_axes). Every public function
 * that takes an axis takes it so (docs/neoml.md, "Axes"). */
cblob_status cb_shape_canonical_axis(const cb_shape *shape, int32_t axis, int32_t *out);

/* The same rule for a bound of a range of axes, which may also be one past the last axis:
 * [-num_axes, num_axes] to [0, num_axes]. */
cblob_status cb_shape_canonical_bound(const cb_shape *shape, int32_t bound, int32_t *out);

/* Caffe's LegacyShape(index): needs at most 4 axes and -4 <= index < 4. */
cblob_status cb_shape_legacy_dim(const cb_shape *shape, int32_t index, int64_t *out);

/* Row-major offset of leading indices, every index strictly inside its axis. */
cblob_status cb_shape_offset(const cb_shape *shape, int32_t num_indices, const int64_t *indices, int64_t *out);

/* Writes Caffe's shape string ("2 3 4 5 (120)") into buffer (snprintf semantics) and returns
 * its full length. */
size_t cb_shape_format(const cb_shape *shape, char *buffer, size_t buffer_size);

#endif
