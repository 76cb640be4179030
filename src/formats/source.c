/* SPDX-License-Identifier: BSD-2-Clause */
#include "source.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "crc32.h"
#include "progress.h"
#include "status.h"
#include "threads.h"

/* A file is read into its image in blocks of this size, each once. */
#define CB_SOURCE_BLOCK ((size_t)1024)
/* Copies of at least this many bytes go straight from the file to their place; smaller ones are
 * read into the image with their neighbours (one read for many small fields). */
#define CB_SOURCE_DIRECT ((size_t)64 << 10)
/* Memory is let go of in steps of at least this much (a call per small layer would cost more). */
#define CB_SOURCE_RELEASE_STEP ((size_t)1 << 20)
/* How much of a large copy from memory is made before the input behind it is let go of. */
#define CB_SOURCE_COPY_STEP ((size_t)4 << 20)
/* A range read with its CRC-32 is read in at most this many parts (the threads' work), each
 * summed as it is read, a piece at a time: the piece is still in the cache when it is summed. */
#define CB_SOURCE_CRC_PARTS 64
#define CB_SOURCE_CRC_PIECE ((size_t)256 << 10)
/* A multiple of every page size: a range let go of starts on one, so that the page across the
 * last range's end goes with the next range. */
#define CB_SOURCE_PAGES ((size_t)64 << 10)
/* What a read into the image may hold beyond its bytes: a page it starts in. */
#define CB_SOURCE_PAGE_GUESS ((size_t)4096)

void cb_source_memory(cb_source *source, const uint8_t *bytes, size_t size, const cb_input *input)
{
    *source = (cb_source){.bytes = bytes, .size = size, .input = input};
}

static bool block_read(const cb_source *source, size_t block)
{
    return source->read[block / 8] & (1u << (block % 8));
}

static void mark_read(cb_source *source, size_t block)
{
    source->read[block / 8] |= (uint8_t)(1u << (block % 8));
}

cblob_status cb_source_file(cb_source *source, const cb_input_file *file, const uint8_t *head, size_t head_size)
{
    *source = (cb_source){.file = file};
    CB_TRY(cb_input_file_image(file, &source->image));
    source->bytes = source->image.bytes;
    source->size = source->image.size;
    const size_t blocks = (source->size + CB_SOURCE_BLOCK - 1) / CB_SOURCE_BLOCK;
    source->read = cb_calloc(blocks / 8 + 1, 1);
    if (source->read == NULL) {
        cb_input_close(&source->image);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to note which parts of the file were read");
    }
    if (head_size > source->size)
        head_size = source->size;
    memcpy((uint8_t *)source->bytes, head, head_size);
    /* Whole blocks of the head, and the last block when the head is the whole file. */
    const size_t whole = head_size == source->size ? blocks : head_size / CB_SOURCE_BLOCK;
    for (size_t block = 0; block < whole; ++block)
        mark_read(source, block);
    return CBLOB_OK;
}

void cb_source_close(cb_source *source)
{
    if (source->file != NULL) {
        cb_input_close(&source->image);
        free(source->read);
    }
    *source = (cb_source){0};
}

typedef struct file_range {
    const cb_input_file *file;
    uint64_t offset;
    uint8_t *to;
    bool checked;
    size_t length, part; /* read with CRC-32s: the range's length, and the bytes of each part */
    uint32_t *crcs;      /* ... each part's CRC-32 */
} file_range;

static cblob_status read_range(void *arg, int64_t begin, int64_t end)
{
    const file_range *range = arg;
    return (range->checked ? cb_input_file_read : cb_input_file_read_unchecked)(
        range->file, range->offset + (uint64_t)begin, range->to + begin, (size_t)(end - begin));
}

/* Parts [begin, end) of a range read with CRC-32s: each read a piece at a time, each piece summed
 * right after it is read, while it is in the cache (a second pass over memory cost more than the
 * sum itself). */
static cblob_status read_parts(void *arg, int64_t begin, int64_t end)
{
    file_range *range = arg;
    for (int64_t p = begin; p < end; ++p) {
        const size_t first = (size_t)p * range->part;
        const size_t last = range->length - first < range->part ? range->length : first + range->part;
        uint32_t crc = 0;
        for (size_t at = first; at < last;) {
            const size_t piece = last - at < CB_SOURCE_CRC_PIECE ? last - at : CB_SOURCE_CRC_PIECE;
            CB_TRY(read_range(range, (int64_t)at, (int64_t)(at + piece)));
            crc = cb_crc32(crc, range->to + at, piece);
            at += piece;
        }
        range->crcs[p] = crc;
    }
    return CBLOB_OK;
}

/* Reads a range of a file, large ones on the pool's threads (which first-touch the fresh pages
 * they fill); with crc (else NULL), *crc goes on over the bytes read. */
static cblob_status read_parallel(const cb_input_file *file, uint64_t offset, void *to, size_t length, bool checked,
                                  uint32_t *crc)
{
    file_range range = {file, offset, to, checked, length, 0, NULL};
    if (length < CB_SOURCE_DIRECT) {
        CB_TRY(read_range(&range, 0, (int64_t)length));
        if (crc != NULL)
            *crc = cb_crc32(*crc, to, length);
        return CBLOB_OK;
    }
    if (crc == NULL)
        return cb_parallel_for((int64_t)length, 2, 4096, read_range, &range);
    uint32_t crcs[CB_SOURCE_CRC_PARTS];
    const size_t per_part = (length + CB_SOURCE_CRC_PARTS - 1) / CB_SOURCE_CRC_PARTS;
    range.part = per_part < CB_SOURCE_CRC_PIECE ? CB_SOURCE_CRC_PIECE : (per_part + 4095) / 4096 * 4096;
    range.crcs = crcs;
    const size_t parts = (length + range.part - 1) / range.part;
    CB_TRY(cb_parallel_for((int64_t)parts, 2 * range.part, 1, read_parts, &range));
    for (size_t p = 0; p < parts; ++p) {
        const size_t size = p + 1 < parts ? range.part : length - p * range.part;
        *crc = cb_crc32_combine(*crc, crcs[p], size);
    }
    return CBLOB_OK;
}

/* Every read of a file a walk makes goes through here, unchecked: the reader checks the file once
 * when it is done (cb_source_check). With crc, as read_parallel. */
static cblob_status read_file(cb_source *source, size_t offset, void *to, size_t length, uint32_t *crc)
{
    source->bytes_read += length;
    /* The call's progress is told after each piece, so that a stop is seen within a step. */
    cb_progress *progress = cb_progress_current(CB_PROGRESS_READING);
    if (progress == NULL)
        return read_parallel(source->file, offset, to, length, false, crc);
    for (size_t done = 0; done < length;) {
        const size_t piece = length - done < (size_t)CB_PROGRESS_STEP ? length - done : (size_t)CB_PROGRESS_STEP;
        CB_TRY(read_parallel(source->file, offset + done, (uint8_t *)to + done, piece, false, crc));
        CB_TRY(cb_progress_add(progress, piece));
        done += piece;
    }
    return CBLOB_OK;
}

cblob_status cb_source_check(const cb_source *source)
{
    return source->file != NULL ? cb_input_file_check(source->file) : CBLOB_OK;
}

cblob_status cb_source_need(cb_source *source, size_t from, size_t to)
{
    if (to > source->size)
        to = source->size;
    if (source->file == NULL || from >= to || (from >= source->ready_from && to <= source->ready_to))
        return CBLOB_OK;
    const size_t last = (to - 1) / CB_SOURCE_BLOCK;
    for (size_t block = from / CB_SOURCE_BLOCK; block <= last;) {
        if (block_read(source, block)) {
            ++block;
            continue;
        }
        size_t end = block;
        while (end <= last && !block_read(source, end))
            mark_read(source, end++);
        const size_t start_byte = block * CB_SOURCE_BLOCK;
        const size_t end_byte = end * CB_SOURCE_BLOCK < source->size ? end * CB_SOURCE_BLOCK : source->size;
        CB_TRY(read_file(source, start_byte, (uint8_t *)source->bytes + start_byte, end_byte - start_byte, NULL));
        if (source->held_to <= source->held_from || start_byte < source->held_from)
            source->held_from = start_byte;
        if (end_byte > source->held_to)
            source->held_to = end_byte;
        source->held += end_byte - start_byte + CB_SOURCE_PAGE_GUESS;
        block = end;
    }
    source->ready_from = from / CB_SOURCE_BLOCK * CB_SOURCE_BLOCK;
    source->ready_to = (last + 1) * CB_SOURCE_BLOCK;
    return CBLOB_OK;
}

/* The image's bytes [from, to) were let go of: the blocks wholly inside are read again (not seen
 * as zeros) should anyone look. */
static void forget_blocks(cb_source *source, size_t from, size_t to)
{
    size_t block = (from + CB_SOURCE_BLOCK - 1) / CB_SOURCE_BLOCK;
    const size_t end = to / CB_SOURCE_BLOCK;
    for (; block < end && block % 8 != 0; ++block)
        source->read[block / 8] &= (uint8_t) ~(1u << (block % 8));
    if (end / 8 > block / 8) {
        memset(source->read + block / 8, 0, end / 8 - block / 8);
        block = end / 8 * 8;
    }
    for (; block < end; ++block)
        source->read[block / 8] &= (uint8_t) ~(1u << (block % 8));
}

/* Copies bytes of the image that will not be looked at again, letting go of its whole pages inside
 * them as it goes (and forgetting that their blocks were read), so that a long run read to be
 * looked at (a huge name) is not held twice. */
static void copy_and_let_go(cb_source *source, size_t from, size_t length, uint8_t *to, uint32_t *crc)
{
    if (length >= CB_SOURCE_COPY_STEP)
        source->ready_from = source->ready_to = 0;
    for (size_t done = 0; done < length;) {
        const size_t step = length - done < CB_SOURCE_COPY_STEP ? length - done : CB_SOURCE_COPY_STEP;
        memcpy(to + done, source->bytes + from + done, step);
        if (crc != NULL)
            *crc = cb_crc32(*crc, to + done, step);
        if (length >= CB_SOURCE_COPY_STEP) {
            cb_input_done_with(&source->image, from + done, step);
            forget_blocks(source, from + done, from + done + step);
        }
        done += step;
    }
}

/* From a file: the blocks read already are copied from the image, the others read straight. */
static cblob_status copy_from_file(cb_source *source, size_t from, size_t length, uint8_t *to, uint32_t *crc)
{
    if (length < CB_SOURCE_DIRECT) {
        CB_TRY(cb_source_need(source, from, from + length));
        memcpy(to, source->bytes + from, length);
        if (crc != NULL)
            *crc = cb_crc32(*crc, to, length);
        return CBLOB_OK;
    }
    for (size_t at = from, end = from + length; at < end;) {
        const size_t block = at / CB_SOURCE_BLOCK;
        const bool present = block_read(source, block);
        size_t run_end = (block + 1) * CB_SOURCE_BLOCK;
        while (run_end < end && block_read(source, run_end / CB_SOURCE_BLOCK) == present)
            run_end += CB_SOURCE_BLOCK;
        if (run_end > end)
            run_end = end;
        if (present)
            copy_and_let_go(source, at, run_end - at, to + (at - from), crc);
        else
            CB_TRY(read_file(source, at, to + (at - from), run_end - at, crc));
        at = run_end;
    }
    return CBLOB_OK;
}

cblob_status cb_source_copy(cb_source *source, size_t from, size_t length, void *to)
{
    return cb_source_copy_crc(source, from, length, to, NULL);
}

cblob_status cb_source_copy_crc(cb_source *source, size_t from, size_t length, void *to, uint32_t *crc)
{
    if (length == 0)
        return CBLOB_OK;
    if (source->file != NULL)
        return copy_from_file(source, from, length, to, crc);
    if (length < CB_SOURCE_COPY_STEP) {
        memcpy(to, source->bytes + from, length);
        if (crc != NULL)
            *crc = cb_crc32(*crc, to, length);
        return CBLOB_OK;
    }
    /* Large values: copied by the pool's threads (which first-touch the fresh pages), the input
     * behind them let go of step by step, so a file read whole is not held twice. */
    for (size_t done = 0; done < length;) {
        const size_t step = length - done < CB_SOURCE_COPY_STEP ? length - done : CB_SOURCE_COPY_STEP;
        cb_parallel_copy((uint8_t *)to + done, source->bytes + from + done, step);
        if (crc != NULL)
            *crc = cb_crc32(*crc, (uint8_t *)to + done, step);
        if (source->input != NULL)
            cb_input_done_with(source->input, from + done, step);
        done += step;
    }
    return CBLOB_OK;
}

void cb_source_release(cb_source *source, size_t upto)
{
    if (upto > source->size)
        upto = source->size;
    if (upto < source->released + CB_SOURCE_RELEASE_STEP)
        return;
    if (source->file != NULL) {
        /* Only what was read since the last time holds memory (values skipped or copied straight
         * never entered the image): no call until that is a step's worth (a sparse walk, over
         * large values left in the file, lets go of its few pages now and then). */
        if (source->held < CB_SOURCE_RELEASE_STEP)
            return;
        size_t from = source->released > source->held_from ? source->released : source->held_from;
        from -= from % CB_SOURCE_PAGES;
        const size_t held_pages = (source->held_to + CB_SOURCE_PAGES - 1) / CB_SOURCE_PAGES * CB_SOURCE_PAGES;
        const size_t to = held_pages < upto ? held_pages : upto;
        if (source->held_to > source->held_from && to > from) {
            source->ready_from = source->ready_to = 0;
            cb_input_done_with(&source->image, from, to - from);
            forget_blocks(source, from, to);
        }
        if (source->held_to <= upto)
            source->held_from = source->held_to = 0;
        else if (source->held_from < upto)
            source->held_from = upto;
        source->held = source->held_to - source->held_from;
    } else if (source->input != NULL)
        cb_input_done_with(source->input, source->released, upto - source->released);
    source->released = upto;
}

cblob_status cb_source_wire_need(void *source, size_t from, size_t to)
{
    return cb_source_need(source, from, to);
}

cblob_status cb_source_read_values(const cb_input_file *file, uint64_t offset, void *to, size_t length, uint32_t *crc)
{
    return read_parallel(file, offset, to, length, true, crc);
}
