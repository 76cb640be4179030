/* SPDX-License-Identifier: BSD-2-Clause */
#include "zip.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "alloc.h"
#include "crc32.h"
#include "status.h"
#include "utf8.h"

enum {
    LOCAL_SIGNATURE = 0x04034b50,
    CENTRAL_SIGNATURE = 0x02014b50,
    END_SIGNATURE = 0x06054b50,
    END64_SIGNATURE = 0x06064b50,
    LOCATOR64_SIGNATURE = 0x07064b50,
    DESCRIPTOR_SIGNATURE = 0x08074b50,
    LOCAL_SIZE = 30,
    CENTRAL_SIZE = 46,
    END_SIZE = 22,
    END64_SIZE = 56,
    LOCATOR64_SIZE = 20,
    ZIP64_EXTRA = 0x0001,
    FLAG_ENCRYPTED = 1,
    FLAG_DESCRIPTOR = 1 << 3,
    FLAG_UTF8 = 1 << 11,
    METHOD_STORED = 0,
    METHOD_DEFLATED = 8,
};

/* A zip's 32-bit fields full of ones mean "in the zip64 record". */
#define ZIP32_MAX 0xffffffffu
#define ZIP16_MAX 0xffffu
/* An archive's comment is at most 64 KiB: its end record lies in the last bytes. */
#define END_SEARCH ((size_t)END_SIZE + ZIP16_MAX)
/* Deflated bytes are read in pieces of this size. */
#define INFLATE_PIECE ((size_t)64 << 10)
/* ... but the first piece is this small: a lazy open inflates a member's .npy header only. */
#define INFLATE_FIRST_PIECE ((size_t)4 << 10)
/* Inflated bytes are summed (CRC-32) this many at a time, while they are in the cache. */
#define INFLATE_SUM_STEP ((size_t)1 << 20)

static cblob_status malformed(const char *what)
{
    return cb_fail(CBLOB_ERR_PARSE, "malformed npz: %s", what);
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* The source's bytes [at, at + size), readable, or a parse error naming what lies past its end. */
static cblob_status bytes_at(cb_source *source, uint64_t at, uint64_t size, const char *what, const uint8_t **out)
{
    if (at > source->size || size > source->size - at)
        return malformed(what);
    CB_TRY(cb_source_need(source, (size_t)at, (size_t)(at + size)));
    *out = source->bytes + at;
    return CBLOB_OK;
}

/* ---- reading ---------------------------------------------------------------------------------- */

/* The zip64 end record a locator before the end record points at. */
static cblob_status read_end64(cb_source *source, uint64_t end, cb_zip_reader *out)
{
    const uint8_t *locator = NULL, *record = NULL;
    if (end < LOCATOR64_SIZE)
        return CBLOB_OK;
    CB_TRY(bytes_at(source, end - LOCATOR64_SIZE, LOCATOR64_SIZE, "the zip64 locator lies outside the archive",
                    &locator));
    if (get32(locator) != LOCATOR64_SIGNATURE)
        return CBLOB_OK;
    CB_TRY(bytes_at(source, get64(locator + 8), END64_SIZE, "the zip64 end record lies outside the archive", &record));
    if (get32(record) != END64_SIGNATURE)
        return malformed("the zip64 end record is not where its locator says");
    out->count = get64(record + 32);
    out->directory_size = get64(record + 40);
    out->directory = get64(record + 48);
    return CBLOB_OK;
}

cblob_status cb_zip_open(cb_source *source, cb_zip_reader *out)
{
    const uint8_t *head = NULL;
    if (source->size < END_SIZE)
        return malformed(source->size == 0 ? "no bytes (an empty archive is 22 bytes, its end record)"
                                           : "fewer bytes than a zip archive's end record");
    CB_TRY(bytes_at(source, 0, 4, "", &head));
    if (get32(head) != LOCAL_SIGNATURE && get32(head) != END_SIGNATURE)
        return malformed("it does not start as a zip archive does (PK\\3\\4)");
    /* The end record: the last signature whose comment length reaches the archive's end. */
    const size_t search = source->size < END_SEARCH ? source->size : END_SEARCH;
    const uint8_t *tail = NULL;
    CB_TRY(bytes_at(source, source->size - search, search, "", &tail));
    size_t end = SIZE_MAX;
    for (size_t at = search - END_SIZE + 1; at-- > 0;)
        if (get32(tail + at) == END_SIGNATURE && at + END_SIZE + get16(tail + at + 20) == search) {
            end = at;
            break;
        }
    if (end == SIZE_MAX)
        return malformed("no end of central directory record (not a zip archive, or a truncated one)");
    const uint8_t *record = tail + end;
    if (get16(record + 4) != 0 || get16(record + 6) != 0)
        return malformed("a multi-disk archive");
    *out = (cb_zip_reader){.source = source, .count = get16(record + 10), .directory_size = get32(record + 12),
                           .directory = get32(record + 16)};
    const uint64_t end_offset = source->size - search + end;
    if (out->count == ZIP16_MAX || out->directory_size == ZIP32_MAX || out->directory == ZIP32_MAX)
        CB_TRY(read_end64(source, end_offset, out));
    if (out->directory > end_offset || out->directory_size > end_offset - out->directory)
        return malformed("the central directory lies outside the archive");
    /* Each entry takes at least its fixed part: a count that cannot fit is refused before anything. */
    if (out->count > out->directory_size / CENTRAL_SIZE)
        return malformed("the central directory is smaller than its entries");
    out->at = out->directory;
    return CBLOB_OK;
}

void cb_zip_rewind(cb_zip_reader *reader)
{
    reader->at = reader->directory;
    reader->read = 0;
}

/* The zip64 extra field's values for the fields that are full of ones, in their order. */
static cblob_status zip64_values(const uint8_t *extra, size_t length, cb_zip_entry *entry, bool offset_too)
{
    const bool wants[3] = {entry->size == ZIP32_MAX, entry->compressed == ZIP32_MAX, offset_too};
    if (!wants[0] && !wants[1] && !wants[2])
        return CBLOB_OK;
    for (size_t at = 0; at + 4 <= length;) {
        const uint16_t id = get16(extra + at), size = get16(extra + at + 2);
        if (at + 4 + size > length)
            break;
        if (id == ZIP64_EXTRA) {
            uint64_t *fields[3] = {&entry->size, &entry->compressed, &entry->local_offset};
            size_t used = 0;
            for (int i = 0; i < 3; ++i) {
                if (!wants[i])
                    continue;
                if (used + 8 > size)
                    return malformed("a zip64 extra field is shorter than the fields it stands for");
                *fields[i] = get64(extra + at + 4 + used);
                used += 8;
            }
            return CBLOB_OK;
        }
        at += 4 + (size_t)size;
    }
    return malformed("an entry's size or offset is in a zip64 extra field it does not have");
}

cblob_status cb_zip_next(cb_zip_reader *reader, cb_zip_entry *out, bool *more)
{
    *more = reader->read < reader->count;
    if (!*more)
        return CBLOB_OK;
    const uint64_t end = reader->directory + reader->directory_size;
    const uint8_t *fixed = NULL, *variable = NULL;
    if (reader->at > end || end - reader->at < CENTRAL_SIZE)
        return malformed("the central directory ends inside an entry");
    CB_TRY(bytes_at(reader->source, reader->at, CENTRAL_SIZE, "", &fixed));
    if (get32(fixed) != CENTRAL_SIGNATURE)
        return malformed("a central directory entry has no signature");
    const size_t name = get16(fixed + 28), extra = get16(fixed + 30), comment = get16(fixed + 32);
    if (end - reader->at - CENTRAL_SIZE < name + extra + comment)
        return malformed("the central directory ends inside an entry");
    CB_TRY(bytes_at(reader->source, reader->at + CENTRAL_SIZE, name + extra, "", &variable));
    *out = (cb_zip_entry){.name = (const char *)variable, .name_length = name, .flags = get16(fixed + 8),
                          .method = get16(fixed + 10), .crc = get32(fixed + 16), .compressed = get32(fixed + 20),
                          .size = get32(fixed + 24), .local_offset = get32(fixed + 42)};
    CB_TRY(zip64_values(variable + name, extra, out, out->local_offset == ZIP32_MAX));
    reader->at += CENTRAL_SIZE + name + extra + comment;
    ++reader->read;
    return CBLOB_OK;
}

/* Code page 437's characters for the bytes 0x80-0xff (Python's codec "cp437"). */
static const uint16_t cp437_high[128] = {
    0x00c7, 0x00fc, 0x00e9, 0x00e2, 0x00e4, 0x00e0, 0x00e5, 0x00e7, 0x00ea, 0x00eb, 0x00e8, 0x00ef, 0x00ee, 0x00ec,
    0x00c4, 0x00c5, 0x00c9, 0x00e6, 0x00c6, 0x00f4, 0x00f6, 0x00f2, 0x00fb, 0x00f9, 0x00ff, 0x00d6, 0x00dc, 0x00a2,
    0x00a3, 0x00a5, 0x20a7, 0x0192, 0x00e1, 0x00ed, 0x00f3, 0x00fa, 0x00f1, 0x00d1, 0x00aa, 0x00ba, 0x00bf, 0x2310,
    0x00ac, 0x00bd, 0x00bc, 0x00a1, 0x00ab, 0x00bb, 0x2591, 0x2592, 0x2593, 0x2502, 0x2524, 0x2561, 0x2562, 0x2556,
    0x2555, 0x2563, 0x2551, 0x2557, 0x255d, 0x255c, 0x255b, 0x2510, 0x2514, 0x2534, 0x252c, 0x251c, 0x2500, 0x253c,
    0x255e, 0x255f, 0x255a, 0x2554, 0x2569, 0x2566, 0x2560, 0x2550, 0x256c, 0x2567, 0x2568, 0x2564, 0x2565, 0x2559,
    0x2558, 0x2552, 0x2553, 0x256b, 0x256a, 0x2518, 0x250c, 0x2588, 0x2584, 0x258c, 0x2590, 0x2580, 0x03b1, 0x00df,
    0x0393, 0x03c0, 0x03a3, 0x03c3, 0x00b5, 0x03c4, 0x03a6, 0x0398, 0x03a9, 0x03b4, 0x221e, 0x03c6, 0x03b5, 0x2229,
    0x2261, 0x00b1, 0x2265, 0x2264, 0x2320, 0x2321, 0x00f7, 0x2248, 0x00b0, 0x2219, 0x00b7, 0x221a, 0x207f, 0x00b2,
    0x25a0, 0x00a0,
};

cblob_status cb_zip_entry_name(const cb_zip_entry *entry, char **name, size_t *capacity, size_t *length)
{
    const bool utf8 = (entry->flags & FLAG_UTF8) != 0;
    if (utf8 && !cb_utf8_valid(entry->name, entry->name_length))
        return malformed("a member's name is marked UTF-8 (flag bit 11) but is not valid UTF-8");
    /* Code page 437's characters past ASCII take at most 3 bytes of UTF-8. */
    const size_t most = utf8 ? entry->name_length : entry->name_length * 3;
    if (most + 1 > *capacity) {
        char *grown = cb_realloc(*name, most + 1);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %zu-byte member name", entry->name_length);
        *name = grown;
        *capacity = most + 1;
    }
    size_t used = 0;
    for (size_t i = 0; i < entry->name_length; ++i) {
        const uint8_t byte = (uint8_t)entry->name[i];
        if (utf8 || byte < 0x80)
            (*name)[used++] = (char)byte;
        else
            used += cb_utf8_encode(cp437_high[byte - 0x80], *name + used);
    }
    (*name)[used] = '\0';
    *length = used;
    return CBLOB_OK;
}

/* A deflated member's inflater and its buffer of compressed bytes. */
static cblob_status start_inflating(cb_zip_member *member)
{
    member->inflater = cb_calloc(1, sizeof *member->inflater);
    member->buffer = cb_malloc(INFLATE_PIECE);
    if (member->inflater == NULL || member->buffer == NULL || inflateInit2(member->inflater, -MAX_WBITS) != Z_OK) {
        free(member->buffer);
        free(member->inflater);
        *member = (cb_zip_member){0};
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to inflate an npz member");
    }
    return CBLOB_OK;
}

cblob_status cb_zip_member_open(cb_zip_reader *reader, const cb_zip_entry *entry, cb_zip_member *out)
{
    *out = (cb_zip_member){.source = reader->source, .entry = entry};
    if (entry->flags & FLAG_ENCRYPTED)
        return malformed("an encrypted member");
    if (entry->method != METHOD_STORED && entry->method != METHOD_DEFLATED)
        return cb_fail(CBLOB_ERR_PARSE, "malformed npz: a member compressed with method %u (only stored and deflated "
                       "members are read)", (unsigned)entry->method);
    if (entry->method == METHOD_STORED && entry->compressed != entry->size)
        return malformed("a stored member's sizes differ");
    const uint8_t *local = NULL;
    CB_TRY(bytes_at(reader->source, entry->local_offset, LOCAL_SIZE, "a member's local header lies outside the archive",
                    &local));
    if (get32(local) != LOCAL_SIGNATURE)
        return malformed("a member's local header has no signature");
    out->data = entry->local_offset + LOCAL_SIZE + get16(local + 26) + get16(local + 28);
    if (out->data > reader->source->size || entry->compressed > reader->source->size - out->data)
        return malformed("a member's bytes lie outside the archive");
    if (entry->method == METHOD_STORED)
        return CBLOB_OK;
    return start_inflating(out);
}

static cblob_status inflate_into(cb_zip_member *member, uint8_t *out, size_t size)
{
    z_stream *z = member->inflater;
    z->next_out = out;
    z->avail_out = 0;
    size_t done = 0;
    while (done < size) {
        if (z->avail_in == 0 && member->consumed < member->entry->compressed) {
            const uint64_t left = member->entry->compressed - member->consumed;
            const size_t most = member->consumed == 0 ? INFLATE_FIRST_PIECE : INFLATE_PIECE;
            const size_t piece = left < most ? (size_t)left : most;
            if (member->file != NULL)
                CB_TRY(cb_input_file_read(member->file, member->data + member->consumed, member->buffer, piece));
            else
                CB_TRY(cb_source_copy(member->source, (size_t)(member->data + member->consumed), piece, member->buffer));
            member->consumed += piece;
            z->next_in = member->buffer;
            z->avail_in = (uInt)piece;
        }
        const size_t step = size - done < ((size_t)1 << 30) ? size - done : ((size_t)1 << 30);
        z->next_out = out + done;
        z->avail_out = (uInt)step;
        const int result = inflate(z, Z_NO_FLUSH);
        done += step - z->avail_out;
        if (result == Z_STREAM_END && done < size)
            return malformed("a deflated member holds fewer bytes than its size says");
        if (result != Z_OK && result != Z_STREAM_END && !(result == Z_BUF_ERROR && z->avail_in == 0 &&
                                                          member->consumed < member->entry->compressed))
            return malformed(result == Z_DATA_ERROR ? "a deflated member's bytes are corrupt"
                                                    : "a deflated member is cut short");
    }
    return CBLOB_OK;
}

uint32_t cb_zip_rest_crc(const cb_zip_member *member)
{
    /* crc(read rest) = crc(read) * x^(8 |rest|) + crc(rest): the sum is its own inverse. */
    return cb_crc32_combine(member->crc, member->entry->crc, member->entry->size - member->produced);
}

/* Inflates the member's next `size` bytes, summing them (member->crc) a step at a time, while they
 * are in the cache. */
static cblob_status inflate_summed(cb_zip_member *member, uint8_t *out, size_t size)
{
    for (size_t done = 0; done < size;) {
        const size_t step = size - done < INFLATE_SUM_STEP ? size - done : INFLATE_SUM_STEP;
        CB_TRY(inflate_into(member, out + done, step));
        member->crc = cb_crc32(member->crc, out + done, step);
        done += step;
    }
    return CBLOB_OK;
}

cblob_status cb_zip_inflate_from_file(const cb_input_file *file, uint64_t data, uint64_t compressed, uint64_t skip,
                                      void *to, size_t size, uint32_t *crc)
{
    const cb_zip_entry entry = {.method = METHOD_DEFLATED, .compressed = compressed, .size = skip + size};
    cb_zip_member member = {.file = file, .entry = &entry, .data = data};
    CB_TRY(start_inflating(&member));
    cblob_status status = CBLOB_OK;
    while (status == CBLOB_OK && member.produced < skip) { /* the bytes before, dropped in `to` */
        const size_t drop = skip - member.produced < size ? (size_t)(skip - member.produced) : size;
        status = inflate_into(&member, to, drop);
        member.produced += drop;
    }
    member.crc = 0;
    if (status == CBLOB_OK)
        status = inflate_summed(&member, to, size);
    *crc = member.crc;
    cb_zip_member_close(&member);
    return status;
}

cblob_status cb_zip_member_read(cb_zip_member *member, void *out, size_t size)
{
    if (size > member->entry->size - member->produced)
        return malformed("a member holds fewer bytes than asked for");
    if (member->inflater != NULL) {
        CB_TRY(inflate_summed(member, out, size));
    } else {
        CB_TRY(cb_source_copy_crc(member->source, (size_t)(member->data + member->produced), size, out, &member->crc));
    }
    member->produced += size;
    return CBLOB_OK;
}

cblob_status cb_zip_member_finish(cb_zip_member *member)
{
    cblob_status status = CBLOB_OK;
    if (member->produced != member->entry->size)
        status = malformed("a member holds more bytes than were read");
    if (status == CBLOB_OK && member->crc != member->entry->crc)
        status = cb_fail(CBLOB_ERR_PARSE, "malformed npz: member \"%.*s\": CRC-32 0x%08" PRIx32 " where the archive "
                         "says 0x%08" PRIx32 " (the archive is corrupt)", (int)(member->entry->name_length < 64 ?
                         member->entry->name_length : 64), member->entry->name, member->crc, member->entry->crc);
    cb_zip_member_close(member);
    return status;
}

void cb_zip_member_close(cb_zip_member *member)
{
    if (member->inflater != NULL)
        inflateEnd(member->inflater);
    free(member->inflater);
    free(member->buffer);
    member->inflater = NULL;
    member->buffer = NULL;
}

/* ---- writing ---------------------------------------------------------------------------------- */

static void put16(uint8_t *p, uint32_t value)
{
    p[0] = (uint8_t)value;
    p[1] = (uint8_t)(value >> 8);
}

static void put32(uint8_t *p, uint32_t value)
{
    put16(p, value);
    put16(p + 2, value >> 16);
}

static void put64(uint8_t *p, uint64_t value)
{
    put32(p, (uint32_t)value);
    put32(p + 4, (uint32_t)(value >> 32));
}

/* Whether a name needs the UTF-8 flag (bytes past ASCII; names are UTF-8). */
static bool non_ascii(const char *name, size_t length)
{
    for (size_t i = 0; i < length; ++i)
        if ((unsigned char)name[i] >= 0x80)
            return true;
    return false;
}

/* 1980-01-01 00:00, as DOS dates: the same model gives the same bytes. */
#define DOS_DATE ((0 << 9) | (1 << 5) | 1)

/* The general purpose flags, the same in a member's local header and its central entry. */
static uint16_t member_flags(const cb_zip_writer *writer, const char *name, size_t length)
{
    return (uint16_t)((non_ascii(name, length) ? FLAG_UTF8 : 0) | (writer->streamed ? FLAG_DESCRIPTOR : 0));
}

uint64_t cb_zip_descriptor_size(const cb_sink *sink, uint64_t size)
{
    return !sink->forward_only ? 0 : size >= ZIP32_MAX ? 24 : 16;
}

cblob_status cb_zip_begin_member(cb_zip_writer *writer, const char *name, size_t length, uint64_t size)
{
    if (length > ZIP16_MAX)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "a zip member's name of %zu bytes is longer than 65535", length);
    if (writer->count == writer->capacity) {
        const int64_t next = writer->capacity > 0 ? 2 * writer->capacity : 64;
        cb_zip_written *grown = cb_realloc(writer->members, (size_t)next * sizeof *grown);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " npz members", next);
        writer->members = grown;
        writer->capacity = next;
    }
    cb_sink *sink = writer->sink;
    if (writer->count == 0)
        writer->streamed = sink->forward_only;
    const bool zip64 = size >= ZIP32_MAX;
    /* Streamed, the sizes and CRC-32 are in the data descriptor after the bytes, as APPNOTE 4.4.4
     * has them (zeros here; all ones and a zip64 field of zeros for a zip64 member, as Python's
     * zipfile writes them): readers take them from the central directory or the descriptor. */
    const uint64_t said = writer->streamed ? 0 : size;
    uint8_t header[LOCAL_SIZE + 20];
    memset(header, 0, sizeof header);
    put32(header, LOCAL_SIGNATURE);
    put16(header + 4, zip64 ? 45 : 20);
    put16(header + 6, member_flags(writer, name, length));
    put16(header + 12, DOS_DATE);
    /* The CRC-32 (at 14) is written once the bytes are. */
    put32(header + 18, zip64 ? ZIP32_MAX : (uint32_t)said);
    put32(header + 22, zip64 ? ZIP32_MAX : (uint32_t)said);
    put16(header + 26, (uint32_t)length);
    put16(header + 28, zip64 ? 20 : 0);
    writer->members[writer->count++] = (cb_zip_written){.offset = sink->position, .size = size};
    cb_sink_write(sink, header, LOCAL_SIZE);
    cb_sink_write(sink, name, length);
    if (zip64) {
        uint8_t extra[20];
        put16(extra, ZIP64_EXTRA);
        put16(extra + 2, 16);
        put64(extra + 4, said);
        put64(extra + 12, said);
        cb_sink_write(sink, extra, sizeof extra);
    }
    cb_sink_crc(sink, true);
    return sink->status;
}

cblob_status cb_zip_end_member(cb_zip_writer *writer)
{
    cb_sink *sink = writer->sink;
    cb_zip_written *member = &writer->members[writer->count - 1];
    member->crc = sink->crc;
    cb_sink_crc(sink, false);
    if (writer->streamed) { /* the data descriptor: signature, CRC-32, then both sizes */
        uint8_t descriptor[24];
        const bool zip64 = member->size >= ZIP32_MAX;
        put32(descriptor, DESCRIPTOR_SIGNATURE);
        put32(descriptor + 4, member->crc);
        if (zip64) {
            put64(descriptor + 8, member->size);
            put64(descriptor + 16, member->size);
        } else {
            put32(descriptor + 8, (uint32_t)member->size);
            put32(descriptor + 12, (uint32_t)member->size);
        }
        cb_sink_write(sink, descriptor, zip64 ? 24 : 16);
        return sink->status;
    }
    if (sink->kind == CB_SINK_COUNT)
        return sink->status;
    const uint64_t end = sink->position;
    uint8_t crc[4];
    put32(crc, member->crc);
    cb_sink_seek(sink, member->offset + 14);
    cb_sink_write(sink, crc, sizeof crc);
    cb_sink_seek(sink, end);
    return sink->status;
}

static void write_central_entry(const cb_zip_writer *writer, const cb_zip_written *member, const char *name,
                                size_t length)
{
    cb_sink *sink = writer->sink;
    const bool big_size = member->size >= ZIP32_MAX, big_offset = member->offset >= ZIP32_MAX;
    /* The zip64 field's values: both sizes when the size needs 64 bits, then the offset when it does. */
    const uint16_t values = (uint16_t)((big_size ? 16 : 0) + (big_offset ? 8 : 0));
    /* The entry's extra length counts the field's 4-byte id and length too. */
    const uint16_t extra = (uint16_t)(values > 0 ? 4 + values : 0);
    uint8_t entry[CENTRAL_SIZE];
    memset(entry, 0, sizeof entry);
    put32(entry, CENTRAL_SIGNATURE);
    put16(entry + 4, big_size || big_offset ? 45 : 20); /* made by: MS-DOS, version 2.0 (4.5 for zip64) */
    put16(entry + 6, big_size || big_offset ? 45 : 20);
    put16(entry + 8, member_flags(writer, name, length));
    put16(entry + 14, DOS_DATE);
    put32(entry + 16, member->crc);
    put32(entry + 20, big_size ? ZIP32_MAX : (uint32_t)member->size);
    put32(entry + 24, big_size ? ZIP32_MAX : (uint32_t)member->size);
    put16(entry + 28, (uint32_t)length);
    put16(entry + 30, extra);
    put32(entry + 42, big_offset ? ZIP32_MAX : (uint32_t)member->offset);
    cb_sink_write(sink, entry, sizeof entry);
    cb_sink_write(sink, name, length);
    if (values > 0) {
        uint8_t fields[4 + 24];
        size_t used = 4;
        put16(fields, ZIP64_EXTRA);
        put16(fields + 2, values);
        if (big_size) {
            put64(fields + used, member->size);
            put64(fields + used + 8, member->size);
            used += 16;
        }
        if (big_offset) {
            put64(fields + used, member->offset);
            used += 8;
        }
        cb_sink_write(sink, fields, used);
    }
}

cblob_status cb_zip_finish(cb_zip_writer *writer, cb_zip_name_fn *names, void *context)
{
    cb_sink *sink = writer->sink;
    const uint64_t directory = sink->position;
    for (int64_t i = 0; i < writer->count; ++i) {
        const char *name = NULL;
        size_t length = 0;
        CB_TRY(names(context, i, &name, &length));
        write_central_entry(writer, &writer->members[i], name, length);
    }
    const uint64_t directory_size = sink->position - directory, count = (uint64_t)writer->count;
    const bool zip64 = count >= ZIP16_MAX || directory_size >= ZIP32_MAX || directory >= ZIP32_MAX;
    if (zip64) {
        const uint64_t record = sink->position;
        uint8_t end64[END64_SIZE + LOCATOR64_SIZE];
        memset(end64, 0, sizeof end64);
        put32(end64, END64_SIGNATURE);
        put64(end64 + 4, END64_SIZE - 12);
        put16(end64 + 12, 45);
        put16(end64 + 14, 45);
        put64(end64 + 24, count);
        put64(end64 + 32, count);
        put64(end64 + 40, directory_size);
        put64(end64 + 48, directory);
        uint8_t *locator = end64 + END64_SIZE;
        put32(locator, LOCATOR64_SIGNATURE);
        put64(locator + 8, record);
        put32(locator + 16, 1);
        cb_sink_write(sink, end64, sizeof end64);
    }
    uint8_t end[END_SIZE];
    memset(end, 0, sizeof end);
    put32(end, END_SIGNATURE);
    put16(end + 8, zip64 ? ZIP16_MAX : (uint32_t)count);
    put16(end + 10, zip64 ? ZIP16_MAX : (uint32_t)count);
    put32(end + 12, zip64 ? ZIP32_MAX : (uint32_t)directory_size);
    put32(end + 16, zip64 ? ZIP32_MAX : (uint32_t)directory);
    cb_sink_write(sink, end, sizeof end);
    return sink->status;
}

void cb_zip_writer_free(cb_zip_writer *writer)
{
    free(writer->members);
    *writer = (cb_zip_writer){0};
}
