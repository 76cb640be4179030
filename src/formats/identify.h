/* SPDX-License-Identifier: BSD-2-Clause */
/* What a file holds, from its first bytes: the kinds cblob reads, and, for the mistakes people
 * make (a text prototxt where the binary file belongs, an HDF5 snapshot, a compressed download, a
 * pickle), a refusal that says what the file is before the reader's detail. Every opener of the
 * library explains its refusals here, so every binding and the program say the same. */
#ifndef CBLOB_SRC_IDENTIFY_H
#define CBLOB_SRC_IDENTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"
#include "io.h"
#include "progress.h"
#include "source.h"

/* Identification reads this many bytes of a file first (a file that cannot be any kind cblob
 * reads is refused after them) ... */
#define CB_IDENTIFY_FIRST_BYTES ((size_t)4 << 10)
/* ... and at most this many, when its first field is longer. */
#define CB_IDENTIFY_HEAD_BYTES ((size_t)64 << 10)

/* The first bytes of a file, read once: readers take them over (cb_source_file) rather than read
 * them again. */
typedef struct cb_file_head {
    uint8_t *bytes;
    size_t size;
    uint64_t file_size;
} cb_file_head;

/* Reads the first CB_IDENTIFY_FIRST_BYTES bytes of a file (all of a smaller one). */
cblob_status cb_read_head(const char *name, const cb_input_file *file, cb_file_head *out);
/* The first bytes of a file and what they say it is (cb_identify); more of them, up to
 * CB_IDENTIFY_HEAD_BYTES, when its first field is longer than the first read. */
cblob_status cb_identify_file(const char *name, const cb_input_file *file, cb_file_head *head, cblob_file_kind *out);
void cb_file_head_free(cb_file_head *head);

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

/* A file being read by a reader: the file, its first bytes, and a source over it that takes them
 * over (so they are not read again) and reads the rest as the reader needs it. The reading is the
 * public call's progress scope (progress.h) for the context given at open: the file's size is the
 * total, and the source tells every byte it reads from the file. */
typedef struct cb_file_reading {
    const char *name; /* the path it was opened by */
    cb_input_file *file;
    cb_file_head head;
    cb_source source;
    cb_progress progress;
    bool scoped; /* progress is a scope of its own, ended at close */
} cb_file_reading;

/* Opens path for a reader on context's behalf (context NULL: no progress scope of its own, the
 * caller's counts). The reading must stay where it is until cb_file_reading_close. */
cblob_status cb_file_reading_open(const cblob_context *context, const char *path, cb_file_reading *out);
/* The same, and what the file's first bytes say it is (a file of no kind cblob reads is refused:
 * cb_identify). */
cblob_status cb_file_reading_identify(const cblob_context *context, const char *path, cb_file_reading *out,
                                      cblob_file_kind *kind);
/* A reader of kind `expected` read the file with `status`: when it succeeded, the file was the one
 * opened all along (cb_source_check) and the progress is told its last call; when it refused it,
 * cb_explain_refusal says why, and a file of that kind that its reader refuses (malformed,
 * truncated) is named first ("<path>: ..."). */
cblob_status cb_file_reading_finish(cb_file_reading *reading, cblob_file_kind expected, cblob_status status);
void cb_file_reading_close(cb_file_reading *reading);

/* Which of NetParameter, BlobProto or BlobProtoVector the bytes hold, from their top-level fields
 * (cblob_proto_detect in the header gives the rules); the same over a source, which is read as
 * needed (field 1's BlobProtos are scanned, their values left unread; a field 1's payload is looked
 * at for a NUL byte in its first 64 KiB only). */
cblob_status cb_proto_detect_kind(const uint8_t *bytes, size_t size, cblob_proto_kind *out);
cblob_status cb_proto_detect_source(cb_source *source, cblob_proto_kind *out);

/* Bytes of one Caffe kind can be valid protobuf for another too, only empty (a vector's blobs
 * read as a net's name, a net's layers as a vector's unknown fields), or fail in a way that says
 * little. When a reader of kind `expected` failed with `status` or found nothing, says "the input
 * holds a BlobProto, not a NetParameter" when detection is sure of another kind; else returns
 * status as it is. prefix: the bytes are the start of a longer input. */
cblob_status cb_explain_kind(const uint8_t *bytes, size_t size, bool prefix, cblob_proto_kind expected,
                             cblob_status status);

/* The kind cb_identify gives a net in protobuf's text format (a prototxt): read by the text reader
 * (model_text_read.c) into a model of kind CBLOB_FILE_NET, never seen outside the library. */
#define CB_FILE_TEXT_NET ((cblob_file_kind)64)
/* A BlobProto in protobuf's text format (its first field is one of BlobProto's): read by the text
 * reader into a blob file of kind CBLOB_FILE_BLOB. */
#define CB_FILE_TEXT_BLOB ((cblob_file_kind)65)
/* Whether a kind is read as text (its errors name line and column). */
#define CB_FILE_IS_TEXT(kind) ((kind) == CB_FILE_TEXT_NET || (kind) == CB_FILE_TEXT_BLOB)

/* "a Caffe net (.caffemodel)", "a NumPy .npz file", ... */
const char *cb_file_kind_text(cblob_file_kind kind);

#endif
