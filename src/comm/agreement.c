/* SPDX-License-Identifier: BSD-2-Clause */
/* The agreement: before a collective hands the engine any data, the ranks compare what each is
 * about to do (cb_signature: the operation, its op or root, the part, the bucket size, the number
 * of listed blobs and each one's dtype and element count, or that the rank refused its own
 * arguments). Engines only sum, so the comparison is an all-gather made of a sum: each rank
 * writes a 64-bit hash of its signature into its own slot of a zeroed buffer and the engine
 * all-reduces it; every rank then holds every rank's hash and reaches the same verdict. Where
 * they differ, more sums of the same buffer carry rank 0's signature and that of the lowest rank
 * that differs from it, a few items at a time, up to their first difference, which every rank
 * then describes in the same words.
 *
 * Not piggy-backed on the first bucket: the first engine call's own size is among the things that
 * may differ, and an engine call whose count differs between ranks is the overflow this prevents.
 * Every exchange here has the same size on every rank (it depends on the communicator's size
 * only), so the agreement itself cannot overflow whatever the other ranks send. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "alloc.h"
#include "status.h"

/* Items of each of the two signatures a detail round carries; even, so that a blob's two items
 * (dtype, element count) always travel in the same round. */
#define CB_DETAIL_ITEMS 16
/* What a signature reads as past its end: no item has this value. */
#define CB_END_ITEM UINT64_MAX

/* ---- the exchange buffer ------------------------------------------------------------------ */

/* The engine dtypes whose elements carry an integer of unit_bits bits exactly through any sum with
 * zeros, in order of preference (more bits per element first). */
static bool pick_dtype(uint32_t dtypes, cblob_dtype *out_dtype, int *out_unit_bits)
{
    static const struct {
        cblob_dtype dtype;
        int unit_bits;
    } choices[] = {
        {CBLOB_DTYPE_UINT32, 32}, {CBLOB_DTYPE_INT32, 32}, {CBLOB_DTYPE_FLOAT64, 32}, {CBLOB_DTYPE_FLOAT32, 16}};
    for (size_t i = 0; i < sizeof choices / sizeof *choices; ++i)
        if (dtypes & (1u << choices[i].dtype)) {
            *out_dtype = choices[i].dtype;
            *out_unit_bits = choices[i].unit_bits;
            return true;
        }
    return false;
}

static int units_per_item(const cb_agreement *a)
{
    return 64 / a->unit_bits;
}

static int64_t buffer_units(const cb_agreement *a)
{
    return a->items * units_per_item(a);
}

static size_t buffer_bytes(const cb_agreement *a)
{
    return (size_t)buffer_units(a) * cb_dtype_find(a->dtype)->size;
}

cblob_status cb_agreement_open(cblob_comm *comm)
{
    cb_agreement *a = &comm->agreement;
    *a = (cb_agreement){0};
    cblob_dtype dtype;
    int unit_bits;
    if (comm->engine.size < 2 || !pick_dtype(comm->engine.dtypes, &dtype, &unit_bits))
        return CBLOB_OK;
    a->dtype = dtype;
    a->unit_bits = unit_bits;
    /* One slot per rank for the hashes; two signatures' worth of items for the detail rounds. */
    a->items = comm->engine.size > 2 * CB_DETAIL_ITEMS ? comm->engine.size : 2 * CB_DETAIL_ITEMS;
    const size_t bytes = buffer_bytes(a);
    a->host = cb_calloc(1, bytes);
    if (a->host == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the agreement of %" PRId32 " ranks (%zu bytes)",
                       comm->engine.size, bytes);
    a->engine_side = a->host;
    if (!cb_device_is_host(comm->device)) {
        const cblob_status status = comm->device->backend->memory->alloc(comm->device, bytes, false, &a->engine_side);
        if (status != CBLOB_OK) {
            free(a->host);
            *a = (cb_agreement){0};
            return status;
        }
    }
    return CBLOB_OK;
}

void cb_agreement_close(cblob_comm *comm)
{
    cb_agreement *a = &comm->agreement;
    if (a->engine_side != NULL && a->engine_side != a->host)
        comm->device->backend->memory->free(comm->device, a->engine_side, buffer_bytes(a));
    free(a->host);
    *a = (cb_agreement){0};
}

bool cb_agreement_active(const cblob_comm *comm)
{
    return comm->check_agreement && comm->agreement.host != NULL;
}

static void put_unit(const cb_agreement *a, int64_t index, uint32_t value)
{
    switch (a->dtype) {
    case CBLOB_DTYPE_FLOAT32: ((float *)a->host)[index] = (float)value; break;
    case CBLOB_DTYPE_FLOAT64: ((double *)a->host)[index] = (double)value; break;
    default: memcpy((char *)a->host + index * 4, &value, 4); break; /* int32 or uint32: the same bits */
    }
}

/* A unit back. A sum of values with zeros is the value itself; anything else (an engine that broke
 * the protocol) still reads the same on every rank, which is all the verdict needs. */
static uint32_t get_unit(const cb_agreement *a, int64_t index)
{
    double value;
    switch (a->dtype) {
    case CBLOB_DTYPE_FLOAT32: value = ((const float *)a->host)[index]; break;
    case CBLOB_DTYPE_FLOAT64: value = ((const double *)a->host)[index]; break;
    default: {
        uint32_t bits;
        memcpy(&bits, (const char *)a->host + index * 4, 4);
        return bits;
    }
    }
    return value >= 0 && value <= 4294967295.0 ? (uint32_t)value : UINT32_MAX;
}

static void put_item(const cb_agreement *a, int64_t slot, uint64_t item)
{
    const int units = units_per_item(a);
    const uint64_t mask = a->unit_bits == 32 ? UINT32_MAX : (1u << a->unit_bits) - 1;
    for (int u = 0; u < units; ++u)
        put_unit(a, slot * units + u, (uint32_t)((item >> (u * a->unit_bits)) & mask));
}

static uint64_t get_item(const cb_agreement *a, int64_t slot)
{
    const int units = units_per_item(a);
    uint64_t item = 0;
    for (int u = 0; u < units; ++u)
        item |= (uint64_t)get_unit(a, slot * units + u) << (u * a->unit_bits);
    return item;
}

/* One all-reduce of the whole buffer, from `host` back into `host`. Any failure breaks the
 * communicator: the other ranks are waiting for this rank's part, or have moved on without it. */
static cblob_status exchange(cblob_comm *comm)
{
    const cb_agreement *a = &comm->agreement;
    const cb_device *device = comm->device;
    char message[CBLOB_COMM_MESSAGE_BYTES] = "";
    /* To and from the host, the device's copies have finished when they return (backend.h). */
    if (a->engine_side != a->host) {
        const cblob_status copied =
            device->backend->memory->copy(device, a->engine_side, a->host, buffer_bytes(a), CB_COPY_HOST_TO_DEVICE);
        if (copied != CBLOB_OK) {
            snprintf(message, sizeof message, "copying the agreement to the device: %s", cblob_last_error_message());
            return cb_comm_engine_failed(comm, copied, message);
        }
    }
    void *pending = NULL;
    cblob_status status = comm->engine.allreduce_sum(comm->engine.state, a->engine_side, buffer_units(a), a->dtype,
                                                     &pending, message, sizeof message);
    if (status != CBLOB_OK)
        return cb_comm_engine_failed(comm, status, message);
    status = comm->engine.wait(comm->engine.state, pending, comm->timeout_ms, message, sizeof message);
    if (status != CBLOB_OK)
        return cb_comm_engine_failed(comm, status, message);
    if (a->engine_side != a->host) {
        status = device->backend->memory->copy(device, a->host, a->engine_side, buffer_bytes(a), CB_COPY_DEVICE_TO_HOST);
        if (status != CBLOB_OK) {
            snprintf(message, sizeof message, "copying the agreement back from the device: %s",
                     cblob_last_error_message());
            return cb_comm_engine_failed(comm, status, message);
        }
    }
    return CBLOB_OK;
}

static void clear(const cb_agreement *a)
{
    memset(a->host, 0, buffer_bytes(a));
}

/* ---- signatures ----------------------------------------------------------------------------- */

/* Items: 0 the collective, 1 the rank's refusal (0: none), 2 the all-reduce's op or the
 * broadcast's root, 3 the part, 4 the bucket size, 5 the number of listed blobs, then each blob's
 * dtype and element count. A refusal and a barrier end after item 1. */
enum { ITEM_KIND, ITEM_REFUSED, ITEM_OP_OR_ROOT, ITEM_PART, ITEM_BUCKET_BYTES, ITEM_COUNT, ITEM_FIRST_BLOB };

static int64_t signature_length(const cb_signature *s)
{
    if (s->refused != CBLOB_OK || s->kind == CB_BARRIER)
        return ITEM_OP_OR_ROOT;
    return ITEM_FIRST_BLOB + 2 * s->count;
}

static uint64_t signature_item(const cb_signature *s, int64_t k)
{
    if (k >= signature_length(s))
        return CB_END_ITEM;
    switch (k) {
    case ITEM_KIND: return (uint64_t)s->kind;
    case ITEM_REFUSED: return (uint32_t)s->refused;
    case ITEM_OP_OR_ROOT: return s->kind == CB_ALLREDUCE ? (uint32_t)s->op : (uint32_t)s->root;
    case ITEM_PART: return (uint32_t)s->part;
    case ITEM_BUCKET_BYTES: return (uint64_t)s->bucket_bytes;
    case ITEM_COUNT: return (uint64_t)s->count;
    default: break;
    }
    const cblob_blob *blob = s->blobs[(k - ITEM_FIRST_BLOB) / 2];
    return (k - ITEM_FIRST_BLOB) % 2 == 0 ? (uint64_t)blob->dtype->dtype : (uint64_t)blob->shape.count;
}

/* splitmix64's finaliser: a bijection that spreads every input bit over the output. */
static uint64_t mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t signature_hash(const cb_signature *s)
{
    const int64_t length = signature_length(s);
    uint64_t hash = 0x63626c6f62616772ull; /* "cblobagr" */
    for (int64_t k = 0; k < length; ++k)
        hash = mix(hash ^ signature_item(s, k)) + 0x9e3779b97f4a7c15ull;
    return mix(hash ^ (uint64_t)length);
}

/* ---- the first difference ------------------------------------------------------------------- */

/* Rank 0's and the other rank's items where they first differ (-1: nowhere), with what a message
 * needs around it: both headers, and both items of the blob it belongs to. */
typedef struct difference {
    int64_t item;
    uint64_t header[2][ITEM_FIRST_BLOB];
    uint64_t blob[2][2];
} difference;

/* Detail rounds: rank 0 writes CB_DETAIL_ITEMS items of its signature into the first half, the
 * other rank the same items of its own into the second; every rank reads both and stops at the
 * same round. */
static cblob_status find_difference(cblob_comm *comm, const cb_signature *mine, int32_t other, difference *out)
{
    const cb_agreement *a = &comm->agreement;
    const int32_t rank = comm->engine.rank;
    for (int64_t first = 0;; first += CB_DETAIL_ITEMS) {
        clear(a);
        for (int64_t k = 0; k < CB_DETAIL_ITEMS; ++k) {
            if (rank == 0)
                put_item(a, k, signature_item(mine, first + k));
            if (rank == other)
                put_item(a, CB_DETAIL_ITEMS + k, signature_item(mine, first + k));
        }
        CB_TRY(exchange(comm));
        for (int64_t k = 0; k < CB_DETAIL_ITEMS; ++k) {
            const uint64_t theirs[2] = {get_item(a, k), get_item(a, CB_DETAIL_ITEMS + k)};
            if (first + k < ITEM_FIRST_BLOB)
                for (int side = 0; side < 2; ++side)
                    out->header[side][first + k] = theirs[side];
            if (theirs[0] != theirs[1]) {
                out->item = first + k;
                /* A blob's dtype item (even past the header) and its count, in this round. */
                const int64_t dtype_item = out->item - (out->item - ITEM_FIRST_BLOB) % 2 - first;
                for (int side = 0; side < 2; ++side)
                    for (int i = 0; i < 2 && out->item >= ITEM_FIRST_BLOB; ++i)
                        out->blob[side][i] = get_item(a, side * CB_DETAIL_ITEMS + dtype_item + i);
                return CBLOB_OK;
            }
            if (theirs[0] == CB_END_ITEM) {
                out->item = -1;
                return CBLOB_OK;
            }
        }
    }
}

/* Room for a refusing rank's message in one detail round: eight bytes an item. */
typedef char refusal_text[CB_DETAIL_ITEMS * 8];

/* One more round, when a rank refused: the refusing ranks' messages (of rank 0 and `other`). */
static cblob_status exchange_refusals(cblob_comm *comm, const cb_signature *mine, const char *my_message, int32_t other,
                                      refusal_text texts[2])
{
    const cb_agreement *a = &comm->agreement;
    const int32_t rank = comm->engine.rank;
    clear(a);
    refusal_text text = {0};
    if (mine->refused != CBLOB_OK && (rank == 0 || rank == other)) {
        /* The other ranks' messages name their own call already. */
        const char *named = strncmp(my_message, "cblob_", 6) == 0 ? strstr(my_message, ": ") : NULL;
        const char *reason = named != NULL ? named + 2 : my_message;
        const size_t length = strlen(reason);
        memcpy(text, reason, length < sizeof text - 1 ? length : sizeof text - 1);
        if (length > sizeof text - 1)
            memcpy(text + sizeof text - 4, "...", 3);
        for (int64_t k = 0; k < CB_DETAIL_ITEMS; ++k) {
            uint64_t item = 0;
            for (int b = 0; b < 8; ++b)
                item |= (uint64_t)(unsigned char)text[k * 8 + b] << (8 * b);
            if (rank == 0)
                put_item(a, k, item);
            if (rank == other)
                put_item(a, CB_DETAIL_ITEMS + k, item);
        }
    }
    CB_TRY(exchange(comm));
    for (int side = 0; side < 2; ++side) {
        for (int64_t k = 0; k < CB_DETAIL_ITEMS; ++k) {
            const uint64_t item = get_item(a, side * CB_DETAIL_ITEMS + k);
            for (int b = 0; b < 8; ++b)
                texts[side][k * 8 + b] = (char)(item >> (8 * b));
        }
        texts[side][sizeof texts[side] - 1] = '\0';
    }
    return CBLOB_OK;
}

/* ---- the message ------------------------------------------------------------------------------ */

static const char *collective_name(uint64_t kind)
{
    switch (kind) {
    case CB_ALLREDUCE: return "an all-reduce";
    case CB_BROADCAST: return "a broadcast";
    case CB_BARRIER: return "a barrier";
    default: return "an unknown collective";
    }
}

static const char *dtype_name(uint64_t dtype)
{
    const cb_dtype_info *info = dtype <= INT32_MAX ? cb_dtype_find((cblob_dtype)dtype) : NULL;
    return info != NULL ? info->name : "unknown-dtype";
}

static const char *op_verb(uint64_t op)
{
    return op == CBLOB_REDUCE_SUM ? "sums" : op == CBLOB_REDUCE_AVERAGE ? "averages" : "reduces by an unknown op";
}

static const char *part_name(uint64_t part)
{
    return part == CBLOB_PART_DATA ? "data" : part == CBLOB_PART_DIFF ? "diff" : "unknown part";
}

#define DISAGREE "the ranks disagree, nothing was sent: "

static cblob_status describe_refusal(const difference *d, int32_t other, const refusal_text texts[2])
{
    const cblob_status theirs[2] = {(cblob_status)(int32_t)d->header[0][ITEM_REFUSED],
                                    (cblob_status)(int32_t)d->header[1][ITEM_REFUSED]};
    if (theirs[0] != CBLOB_OK && theirs[1] != CBLOB_OK)
        return cb_fail(theirs[0], DISAGREE "rank %" PRId32 " refused %s (%s: %s), rank 0 refused it too (%s: %s)",
                       other, collective_name(d->header[1][ITEM_KIND]), cblob_status_name(theirs[1]), texts[1],
                       cblob_status_name(theirs[0]), texts[0]);
    const int side = theirs[0] != CBLOB_OK ? 0 : 1;
    return cb_fail(theirs[side], DISAGREE "rank %" PRId32 " refused %s (%s: %s)", side == 0 ? 0 : other,
                   collective_name(d->header[side][ITEM_KIND]), cblob_status_name(theirs[side]), texts[side]);
}

/* The same status and words on every rank (the other rank first, then rank 0). */
static cblob_status describe(const difference *d, int32_t other)
{
    const uint64_t(*h)[ITEM_FIRST_BLOB] = d->header;
    switch (d->item) {
    case -1:
        return cb_fail(CBLOB_ERR_INTERNAL, "the ranks' signatures hash differently but read the same");
    case ITEM_KIND:
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       DISAGREE "rank %" PRId32 " calls %s, rank 0 %s (every rank must make the same collectives in "
                                "the same order)",
                       other, collective_name(h[1][ITEM_KIND]), collective_name(h[0][ITEM_KIND]));
    case ITEM_OP_OR_ROOT:
        if (h[0][ITEM_KIND] == CB_ALLREDUCE)
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, DISAGREE "rank %" PRId32 " %s, rank 0 %s", other,
                           op_verb(h[1][ITEM_OP_OR_ROOT]), op_verb(h[0][ITEM_OP_OR_ROOT]));
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       DISAGREE "rank %" PRId32 " broadcasts from root %" PRIu64 ", rank 0 from root %" PRIu64, other,
                       h[1][ITEM_OP_OR_ROOT], h[0][ITEM_OP_OR_ROOT]);
    case ITEM_PART:
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, DISAGREE "rank %" PRId32 " works on the %s, rank 0 on the %s", other,
                       part_name(h[1][ITEM_PART]), part_name(h[0][ITEM_PART]));
    case ITEM_BUCKET_BYTES:
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       DISAGREE "rank %" PRId32 " fuses up to %" PRIu64 " bytes per bucket, rank 0 up to %" PRIu64
                                " (cblob_comm_set_bucket_bytes must be the same on every rank)",
                       other, h[1][ITEM_BUCKET_BYTES], h[0][ITEM_BUCKET_BYTES]);
    case ITEM_COUNT:
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, DISAGREE "rank %" PRId32 " lists %" PRIu64 " blobs, rank 0 %" PRIu64,
                       other, h[1][ITEM_COUNT], h[0][ITEM_COUNT]);
    default: break;
    }
    const int64_t blob = (d->item - ITEM_FIRST_BLOB) / 2;
    const bool dtypes_differ = d->blob[0][0] != d->blob[1][0];
    return cb_fail(dtypes_differ ? CBLOB_ERR_DTYPE : CBLOB_ERR_SHAPE,
                   DISAGREE "blobs[%" PRId64 "]: rank %" PRId32 " has %" PRIu64 " %s, rank 0 %" PRIu64 " %s", blob,
                   other, d->blob[1][1], dtype_name(d->blob[1][0]), d->blob[0][1], dtype_name(d->blob[0][0]));
}

/* ---- the verdict ------------------------------------------------------------------------------ */

/* Every rank's hash; the lowest rank whose hash is not rank 0's, or 0 when all are the same. */
static cblob_status gather_hashes(cblob_comm *comm, const cb_signature *mine, int32_t *out_differing)
{
    const cb_agreement *a = &comm->agreement;
    clear(a);
    put_item(a, comm->engine.rank, signature_hash(mine));
    CB_TRY(exchange(comm));
    const uint64_t first = get_item(a, 0);
    *out_differing = 0;
    for (int32_t r = 1; r < comm->engine.size && *out_differing == 0; ++r)
        if (get_item(a, r) != first)
            *out_differing = r;
    return CBLOB_OK;
}

/* The verdict of ranks that disagree: a failure of every rank, the same on each. */
static cblob_status disagreement(cblob_comm *comm, const cb_signature *mine, const char *my_message, int32_t other)
{
    difference d = {.item = -1};
    CB_TRY(find_difference(comm, mine, other, &d));
    if (d.item != ITEM_REFUSED)
        return describe(&d, other);
    refusal_text texts[2];
    CB_TRY(exchange_refusals(comm, mine, my_message, other, texts));
    return describe_refusal(&d, other, texts);
}

cblob_status cb_agree(cblob_comm *comm, const cb_signature *mine)
{
    if (!cb_agreement_active(comm))
        return mine->refused;
    /* A refusing rank keeps its own message, whatever the exchange says. */
    cb_saved_error refusal;
    if (mine->refused != CBLOB_OK)
        cb_error_save(&refusal);
    const char *my_message = mine->refused != CBLOB_OK ? refusal.text : "";
    int32_t differing = 0;
    cblob_status status = gather_hashes(comm, mine, &differing);
    if (status == CBLOB_OK && differing != 0)
        status = disagreement(comm, mine, my_message, differing);
    if (mine->refused == CBLOB_OK)
        return status;
    if (status != CBLOB_OK && comm->broken)
        return cb_fail(status, "%s (this rank had refused the call: %s)", comm->broken_message, my_message);
    cb_error_restore(&refusal);
    return mine->refused;
}
