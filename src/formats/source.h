/* SPDX-License-Identifier: BSD-2-Clause */
/* Where a reader's bytes come from, and the one place they are consumed.
 *
 * A source is an input at its own offsets: bytes in memory (the caller's, or a file src/io read
 * whole), or a file read piece by piece as a reader needs it. A file source reads into an image of
 * the file (io.h, cb_input_file_image): private memory of the file's size in which only the blocks
 * read hold bytes; the rest reads as zeros and costs no memory. So a walk over a file reads the
 * fields it looks at, once each, and never the values it leaves in the file.
 *
 * A reader asks for bytes in two ways, and every byte read from a file goes through one of them
 * (or through cb_source_read_values for a lazily opened model's values):
 * - cb_source_need: bytes it will look at (tags, lengths, strings): present in `bytes` afterwards;
 * - cb_source_copy: bytes it keeps (fields copied into a model, values into their arrays): copied
 *   straight to their place, from the file when they were not read yet (large runs on the thread
 *   pool), so they are never held twice.
 * cb_source_release tells that the bytes before an offset will not be looked at again: their
 * pages leave the process (a file's image, or a file src/io read whole), so a model of many small
 * layers holds about one copy of its file while it is read, not two. */
#ifndef CBLOB_SRC_SOURCE_H
#define CBLOB_SRC_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"
#include "io.h"

typedef struct cb_source {
    const uint8_t *bytes; /* the input at its own offsets: bytes[offset] (a file's image) */
    size_t size;
    const cb_input *input;     /* memory src/io read (its pages can be let go), or NULL: borrowed */
    const cb_input_file *file; /* a file read as needed, or NULL */
    cb_input image;            /* the file's image */
    uint8_t *read;             /* a bit per block of the file read into the image */
    size_t released;           /* bytes before this were let go of */
    size_t ready_from, ready_to; /* a run of blocks known read (most needs fall in the last one) */
    /* The image's bytes read since they were last let go of lie within [held_from, held_to); they
     * hold about `held` bytes of memory (pages counted whole). */
    size_t held_from, held_to, held;
    /* Messages (BlobProtos) shorter than this are read whole when the walk first looks at them:
     * one read where there would be one per field (0: none). */
    size_t read_whole_below;
    uint64_t bytes_read;       /* from the file so far (tests and benchmarks) */
} cb_source;

/* Bytes in memory, whole: borrowed (input NULL) or read by src/io (input: their cb_input, whose
 * pages cb_source_release lets go of). */
void cb_source_memory(cb_source *source, const uint8_t *bytes, size_t size, const cb_input *input);
/* A file opened already (kept open by the caller), of which head[0, head_size) are the first bytes,
 * read already (they are not read again). */
cblob_status cb_source_file(cb_source *source, const cb_input_file *file, const uint8_t *head, size_t head_size);
void cb_source_close(cb_source *source);

/* Makes bytes [from, to) present in source->bytes (to is clipped to the input's size). */
cblob_status cb_source_need(cb_source *source, size_t from, size_t to);
/* cb_source_need as a cursor's need hook (wire.h): source is the cb_source. */
cblob_status cb_source_wire_need(void *source, size_t from, size_t to);
/* Copies bytes [from, from + length) to `to`. */
cblob_status cb_source_copy(cb_source *source, size_t from, size_t length, void *to);
/* The same, *crc going on over the bytes copied (zlib's crc32(*crc, to, length)), each piece
 * summed as it lands, while it is in the cache (an npz member's check). */
cblob_status cb_source_copy_crc(cb_source *source, size_t from, size_t length, void *to, uint32_t *crc);
/* The bytes before `upto` will not be looked at again. */
void cb_source_release(cb_source *source, size_t upto);

/* After a reader is done with a file: it was the file opened all along (the reads of a walk are
 * not checked one by one, io.h). */
cblob_status cb_source_check(const cb_source *source);

/* Reads [offset, offset + length) of a file straight into `to`, large ranges on the thread pool
 * (whose threads first-touch the fresh pages they fill), each read checked (io.h): a lazily opened
 * model's values, read long after the open. With crc (else NULL), *crc goes on over the bytes read
 * (as cb_source_copy_crc). */
cblob_status cb_source_read_values(const cb_input_file *file, uint64_t offset, void *to, size_t length, uint32_t *crc);

#endif
