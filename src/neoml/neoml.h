/* SPDX-License-Identifier: BSD-2-Clause */
/* NeoML blob operations (codegen/api/40_neoml.yaml): what the files of src/neoml share. Where an
 * operation runs, views of a part there, overlap checks, and the blob-making helpers. */
#ifndef CBLOB_SRC_NEOML_NEOML_H
#define CBLOB_SRC_NEOML_NEOML_H

#include <stdbool.h>
#include <stdint.h>

#include "blob.h"

/* Where an operation runs: the host device or the context's GPU. The rules are the header's
 * "Where operations run": reads go where the current copy is (the host unless the head is
 * AT_GPU); writes go to the device when the head is AT_GPU or SYNCED, or when a part never
 * accessed belongs to a context in GPU mode. Both make the rest of the call use the thread setting
 * of the blob's context (cb_context_use_threads). */
cblob_status cb_place_for_read(cblob_blob *blob, cblob_part part, const cb_device **out);
cblob_status cb_place_for_write(cblob_blob *blob, cblob_part part, const cb_device **out);

/* Windows (window.c): whether the blob views rows of a parent. */
bool cb_blob_is_window(const cblob_blob *blob);
/* Mappings (buffer.c): whether the blob has open mappings. */
bool cb_blob_is_mapped(const cblob_blob *blob);

/* Whether the elements of two parts share bytes (memory of distinct storages, such as an export
 * imported again, is compared by address), and whether they are the very same elements of one
 * storage. */
bool cb_parts_overlap(const cblob_blob *a, cblob_part part_a, const cblob_blob *b, cblob_part part_b);
bool cb_parts_identical(const cblob_blob *a, cblob_part part_a, const cblob_blob *b, cblob_part part_b);

/* CBLOB_ERR_SHAPE unless the blob has the 7 axes of a NeoML blob; `name` is the parameter. */
cblob_status cb_require_neoml(const cblob_blob *blob, const char *name);


/* n elements from `from` (of from_dtype) to `to` (of to_dtype) at a place: a copy when the dtypes
 * are equal, a conversion (cblob.h, "Conversions") otherwise. The truncating form drops the
 * fraction toward zero from a float type to an integer type (NeoML's rule) and is the same for
 * every other pair. */
typedef cblob_status (*cb_element_converter)(const cb_device *place, const cb_dtype_info *from_dtype,
                                             const cb_dtype_info *to_dtype, int64_t n, const void *from, void *to);
cblob_status cb_convert_elements(const cb_device *place, const cb_dtype_info *from_dtype, const cb_dtype_info *to_dtype,
                                 int64_t n, const void *from, void *to);
cblob_status cb_convert_elements_truncating(const cb_device *place, const cb_dtype_info *from_dtype,
                                            const cb_dtype_info *to_dtype, int64_t n, const void *from, void *to);

/* Writes a new blob's part from its source's part, both at `place`. */
typedef cblob_status (*cb_part_writer)(const cb_device *place, const cblob_blob *source, const void *from,
                                       cblob_blob *target, void *to, const void *arg);

/* A new blob of `dtype` and `shape` in source's context, each part the source ever accessed
 * written by `write` where the source's part is current; the others stay UNINITIALIZED. On
 * failure nothing is made. */
cblob_status cb_derive_blob(cblob_blob *source, const cb_dtype_info *dtype, const cb_shape *shape, cb_part_writer write,
                            const void *arg, cblob_blob **out);

#endif
