/* SPDX-License-Identifier: BSD-2-Clause */
/* Zip archives as NumPy's .npz are (PKWARE's APPNOTE 6.3): read from a source, written to a sink.
 *
 * Reading walks the central directory entry by entry and reads a member's bytes when asked:
 * stored ones straight from the source (a file: from the file, to their place), deflated ones
 * (numpy.savez_compressed) through zlib; every member's CRC-32 is checked at its end. Nothing is
 * kept per member. Writing stores members (as numpy.savez does) with their CRC-32 computed as the
 * bytes pass (cb_sink_crc) and written back into the local header, and keeps 24 bytes per member
 * for the central directory. A sink that cannot go back (a FIFO, a device: forward_only) gets
 * the CRC-32 and sizes in a data descriptor after each member's bytes instead (flag bit 3, as
 * Python's zipfile writes to a pipe): one pass, strictly forward, read by numpy.load, zipfile and
 * this reader alike, which take them from the central directory. Zip64 records where sizes,
 * offsets or the count need them. */
#ifndef CBLOB_SRC_ZIP_H
#define CBLOB_SRC_ZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"
#include "sink.h"
#include "source.h"

/* ---- reading ---------------------------------------------------------------------------------- */

typedef struct cb_zip_entry {
    const char *name; /* in the source's bytes, not NUL-terminated ... */
    size_t name_length;
    uint16_t method; /* 0 stored, 8 deflated */
    uint16_t flags;
    uint32_t crc;
    uint64_t compressed, size;
    uint64_t local_offset;
} cb_zip_entry;

typedef struct cb_zip_reader {
    cb_source *source;
    uint64_t count;     /* entries */
    uint64_t directory; /* the central directory's offset ... */
    uint64_t directory_size;
    uint64_t at;        /* ... and the next entry's */
    uint64_t read;      /* entries read */
} cb_zip_reader;

/* Finds the central directory; what is not a zip archive is CBLOB_ERR_PARSE ("malformed npz: ..."). */
cblob_status cb_zip_open(cb_source *source, cb_zip_reader *out);
/* Starts over at the first entry. */
void cb_zip_rewind(cb_zip_reader *reader);
/* The next entry (*more false past the last): its name is readable until the next call. */
cblob_status cb_zip_next(cb_zip_reader *reader, cb_zip_entry *out, bool *more);
/* The entry's name as UTF-8, as Python's zipfile (and so numpy.load) reads it: as it is when the
 * entry's flags say UTF-8 (bit 11), which it then must be (else CBLOB_ERR_PARSE, as zipfile
 * refuses it); else each byte past ASCII as the character it is in code page 437, the zip
 * format's own. Into *name (grown with cb_realloc as needed; *capacity its size), NUL-terminated,
 * *length bytes before the NUL. */
cblob_status cb_zip_entry_name(const cb_zip_entry *entry, char **name, size_t *capacity, size_t *length);

/* A member being read. */
typedef struct cb_zip_member {
    cb_source *source;
    const cb_input_file *file; /* or NULL: compressed bytes read from this file, checked (io.h) */
    const cb_zip_entry *entry;
    uint64_t data;     /* the offset of its (compressed) bytes */
    uint64_t consumed; /* compressed bytes read */
    uint64_t produced; /* bytes given */
    uint32_t crc;
    struct z_stream_s *inflater; /* deflated members */
    uint8_t *buffer;             /* compressed bytes in */
} cb_zip_member;

cblob_status cb_zip_member_open(cb_zip_reader *reader, const cb_zip_entry *entry, cb_zip_member *out);
/* The member's next `size` bytes (fewer left is a parse error). */
cblob_status cb_zip_member_read(cb_zip_member *member, void *out, size_t size);
/* The CRC-32 the bytes of a stored member not read yet must have for the member's to match the
 * archive's (a member whose values are read later, straight from the file). */
uint32_t cb_zip_rest_crc(const cb_zip_member *member);
/* A deflated member's bytes [skip, skip + size) inflated into `to`, long after the archive was
 * read (a lazily opened npz's member, on first access): its `compressed` bytes lie at `data` in
 * the file, read checked (io.h); the first `skip` (its .npy header) are dropped, the next `size`
 * summed into *crc (from 0) as they are inflated. A stream that ends early or is corrupt is
 * CBLOB_ERR_PARSE, as it is to cb_zip_member_read. */
cblob_status cb_zip_inflate_from_file(const cb_input_file *file, uint64_t data, uint64_t compressed, uint64_t skip,
                                      void *to, size_t size, uint32_t *crc);
/* Checks that nothing is left and that the CRC-32 matches; frees the member. */
cblob_status cb_zip_member_finish(cb_zip_member *member);
void cb_zip_member_close(cb_zip_member *member);

/* ---- writing ---------------------------------------------------------------------------------- */

typedef struct cb_zip_written {
    uint64_t offset, size;
    uint32_t crc;
} cb_zip_written;

/* The member names the central directory repeats, asked for again (not kept). */
typedef cblob_status cb_zip_name_fn(void *context, int64_t member, const char **name, size_t *length);

typedef struct cb_zip_writer {
    cb_sink *sink;
    cb_zip_written *members;
    int64_t count, capacity;
    bool streamed; /* data descriptors: the sink is forward_only */
} cb_zip_writer;

/* A member of `size` bytes named name[0, length): its local header; its bytes follow (written to
 * the sink by the caller), then cb_zip_end_member. */
cblob_status cb_zip_begin_member(cb_zip_writer *writer, const char *name, size_t length, uint64_t size);
cblob_status cb_zip_end_member(cb_zip_writer *writer);
/* The bytes of the data descriptor that follows a member of `size` bytes written to this sink: 0
 * unless it is forward_only (the size the writer's progress total adds). */
uint64_t cb_zip_descriptor_size(const cb_sink *sink, uint64_t size);
/* The central directory and its end; frees the writer's list. */
cblob_status cb_zip_finish(cb_zip_writer *writer, cb_zip_name_fn *names, void *context);
void cb_zip_writer_free(cb_zip_writer *writer);

#endif
