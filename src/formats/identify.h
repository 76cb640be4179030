/* SPDX-License-Identifier: BSD-2-Clause */
/* What a file holds, from its first bytes: the kinds cblob reads, and, for the mistakes people
 * make (a text prototxt where the binary file belongs, an HDF5 snapshot, a compressed download, a
 * pickle), a refusal that says what the file is before the reader's detail. Every opener of the
 * library explains its refusals here, so every binding and the program say the same. */
#ifndef CBLOB_SRC_IDENTIFY_H
#define CBLOB_SRC_IDENTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"

/* Identification reads at most this many bytes of a file. */
#define CB_IDENTIFY_HEAD_BYTES ((size_t)64 << 10)

/* The kind of a file whose first bytes are head[0, head_size) (all of it when head_size ==
 * file_size). A Caffe message is told from its first whole top-level fields. A file of no kind
 * cblob reads is CBLOB_ERR_PARSE with the explanation below (`name` names it). */
cblob_status cb_identify(const char *name, const uint8_t *head, size_t head_size, uint64_t file_size,
                         cblob_file_kind *out);

/* A reader of kind `expected` refused the file with `status` (the thread's message says why):
 * when its first bytes show it is something else (another kind cblob reads, or a file people give
 * by mistake), the message says so first, then the reader's detail. Other failures stay as they
 * are. Returns status. */
cblob_status cb_explain_refusal(const char *name, const uint8_t *head, size_t head_size, uint64_t file_size,
                                cblob_file_kind expected, cblob_status status);

/* cb_explain_refusal for a reader that had the whole input: bytes[0, size). */
cblob_status cb_explain_bytes(const char *name, const uint8_t *bytes, size_t size, cblob_file_kind expected,
                              cblob_status status);

/* "a Caffe net (.caffemodel)", "a NumPy .npz file", ... */
const char *cb_file_kind_text(cblob_file_kind kind);

#endif
