/* SPDX-License-Identifier: BSD-2-Clause */
/* NumPy .npy files and folders of them (ABI 1.2, codegen/api/24_files.yaml): a blob from a .npy
 * file's bytes, a blob's part written as one, and the .npy folder written from a model or a file
 * of blobs and read back into a model. The format itself is src/util/npy.h's. */
#ifndef CBLOB_SRC_NPY_FILES_H
#define CBLOB_SRC_NPY_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"
#include "model.h"
#include "source.h"

/* A new blob holding the array of a whole .npy file's bytes, in dtype (0: the array's own). */
cblob_status cb_npy_blob_from_bytes(cblob_context *context, const char *name, const uint8_t *bytes, size_t size,
                                    cblob_dtype dtype, cblob_blob **out);
/* The same from a source: its header read, its values copied straight into the blob. */
cblob_status cb_npy_blob_from_source(cblob_context *context, const char *name, cb_source *source, cblob_dtype dtype,
                                     cblob_blob **out);

/* What a .npy folder is written from: a model's blobs, or a file's blobs (blob_<index>.npy): as
 * handles, or as the one layer of a store (formats_blob.h). */
typedef struct cb_npy_folder_source {
    const cblob_model *model;  /* or NULL: */
    cblob_blob *const *blobs;
    int64_t num_blobs;
    const cblob_model *store;
    const char *source; /* index.json's "source" (NULL: null) */
    const char *kind;   /* index.json's "kind": "net", "blob" or "blob_vector" */
} cb_npy_folder_source;

/* Writes the folder (made when missing) for a call on context, telling its progress: every file
 * staged first, then, after the progress callback's last word, the old index.json removed, the
 * files moved into place and index.json last. A failure or a stop before then changes nothing. */
cblob_status cb_npy_folder_write(const cblob_context *context, const cb_npy_folder_source *source, bool diffs,
                                 const char *folder, int64_t *out_num_files);

/* Reads a .npy folder into a model whose layers are named as the exports name them (a repeated
 * name's later layers `<name>@<index>`), values in dtype (0: their own). Without index.json the
 * folder is refused unless by_name (file names then say which blob each file is). */
cblob_status cb_npy_folder_read(cblob_context *context, const char *folder, bool by_name, cblob_dtype dtype,
                                cblob_model **out);

#endif
