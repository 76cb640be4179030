/* SPDX-License-Identifier: BSD-2-Clause */
/* A folder of .npy files, one per blob part, with index.json: what `cblob convert FILE --to npy
 * DIR` writes, and what `--like` reads back.
 *
 * File names: <stem>_<index>.npy for a blob's data and <stem>_<index>_diff.npy for its diff, where
 * the stem is the layer's name made safe for any file system: characters other than ASCII
 * letters, digits, '.', '-' and '_' become '_'; a leading '.' becomes '_' (no hidden names, no
 * "." or ".."); a stem whose part before its first '.' is a Windows device name (CON, NUL, COM1,
 * ...) gets a leading '_'; an empty name is "layer<i>" (i its index); a stem longer than 100
 * bytes keeps its first 83 and appends '~' and 16 hex digits of the name's FNV-1a hash. Two
 * layers whose stems are equal ignoring ASCII case (so also on a case-insensitive file system)
 * get distinct ones: the first in file order keeps it, a later one appends "_L<i>" (and "_2",
 * "_3", ... should that be taken too). File names are then distinct: the part after a stem's last
 * '_' is the blob index. Blob files write blob_<index>.npy.
 *
 * index.json maps each file back: {"schema": 1, "source", "kind", "files": [{"file", "layer",
 * "layer_index", "blob", "part", "dtype", "shape"}]} (docs/npy-index-schema-1.json); layer and
 * layer_index are null for a blob file's blobs, and a name that is not UTF-8 has U+FFFD in place
 * of each bad byte (its layer_index still finds it). */
#ifndef CBLOB_TOOLS_NPY_FOLDER_H
#define CBLOB_TOOLS_NPY_FOLDER_H

#include "cblob/cblob.h"
#include "tool.h"

/* Writes every blob of a Caffe file, and index.json, into folder (made when missing), through
 * src/io's output folder: nothing is written through a link planted in it, each file appears
 * whole or not at all, and everything is synced once at the end. *written counts the .npy files. */
cblob_status npy_folder_write(const tool_caffe *file, const char *folder, int64_t *written);

/* Reads a folder of .npy files into a model whose layers are named so that
 * cblob_model_replace_blobs finds them in base (when given): an entry of index.json whose
 * layer_index names a layer of base of the same name takes that name, or "<name>@<index>" when an
 * earlier layer of base has it too (so repeated names and names that are not UTF-8 find their
 * layer); any other entry its name. Without index.json, files named <layer>_<index>.npy (and _diff) are read by those names.
 * Values convert to dtype when it is not NPY_DTYPE_AS_IS. */
cblob_status npy_folder_read(cblob_context *context, const char *folder, const cblob_model *base, cblob_dtype dtype,
                             cblob_model **out);

#endif
