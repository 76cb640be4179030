/* SPDX-License-Identifier: BSD-2-Clause */
/* Communicators (DESIGN.md, "Collectives are a backend, like devices"): the core reaches an
 * engine only through its cblob_comm_engine table. Engines live elsewhere: MPI in libcblob_mpi
 * (through the public cblob_comm_create), NCCL in cuda/ (through cb_comm_create_engine with a
 * stream-ordered flag). collective.c cuts lists into buckets and runs requests; agreement.c makes the
 * ranks agree on each collective before its data moves; arena.c lays out arenas, which
 * collectives bring up to date before and after the engine runs. */
#ifndef CBLOB_SRC_COMM_H
#define CBLOB_SRC_COMM_H

#include <stdatomic.h>
#include <stdbool.h>

#include "backend.h"
#include "blob.h"
#include "cblob/cblob.h"

/* What a collective asks of the engine; the values are part of the agreement's signature. */
typedef enum cb_collective { CB_ALLREDUCE = 1, CB_BROADCAST = 2, CB_BARRIER = 3 } cb_collective;

/* The agreement's exchange buffer (agreement.c): `items` 64-bit items, each carried in
 * 64 / unit_bits elements of `dtype` whose values are integers below 2^unit_bits, exact in that
 * dtype and in any sum with zeros. `host` holds them on this side; `engine_side` is what the
 * engine works on (`host` itself for a host engine, device memory for a device engine). Both NULL
 * where no agreement runs: one rank, or an engine that takes no dtype. */
typedef struct cb_agreement {
    cblob_dtype dtype;
    int unit_bits;
    int64_t items;
    void *host;
    void *engine_side;
} cb_agreement;

struct cblob_comm {
    atomic_int holders; /* the caller's and one per live request */
    cblob_context *context;
    cblob_comm_engine engine; /* name points at name_copy */
    char name_copy[64];
    /* Where the engine's memory is: the host device for host engines, the context's device for
     * device engines; stream_ordered engines (NCCL) queue their work on its stream, others get
     * buffers whose writes have finished. */
    const cb_device *device;
    bool stream_ordered;
    int64_t timeout_ms;   /* -1: none */
    int64_t bucket_bytes; /* 0: nothing fused */
    bool check_agreement; /* cblob_comm_set_agreement_check: on unless the caller turned it off */
    cb_agreement agreement;
    /* Set by the first failed engine operation: every later collective fails with it. */
    bool broken;
    char broken_message[CBLOB_COMM_MESSAGE_BYTES + 128];
    /* Requests that failed after the engine was given their memory, which stays allocated until
     * the engine is destroyed (collective.c, request_free). */
    struct cblob_comm_request *parked;
};

/* cblob_comm_create's work, for engines of the library itself: `stream_ordered` engines take
 * device buffers whose pending writes are queued on the device's stream and queue their own
 * work after them. Validates the table as cblob_comm_create documents. */
cblob_status cb_comm_create_engine(cblob_context *context, const cblob_comm_engine *engine, bool stream_ordered,
                                   cblob_comm **out);

/* Breaks the communicator with an engine's failure (its status and message) and fails the call
 * with it: every later collective fails at once with CBLOB_ERR_COMM. */
cblob_status cb_comm_engine_failed(cblob_comm *comm, cblob_status status, char *message);

/* What a rank is about to do, as the ranks compare it before any data moves (agreement.c). A rank
 * whose own checks or preparation failed takes part with `refused` (its status) and nothing more. */
typedef struct cb_signature {
    cb_collective kind;
    cblob_status refused;
    cblob_reduce_op op; /* all-reduce */
    int32_t root;       /* broadcast */
    cblob_part part;
    int64_t bucket_bytes;
    cblob_blob *const *blobs;
    int64_t count;
} cb_signature;

/* The exchange buffer for a communicator whose engine is set (its device opened); nothing for one
 * rank. Fails with CBLOB_ERR_OUT_OF_MEMORY or a device status. */
cblob_status cb_agreement_open(cblob_comm *comm);
/* Frees it; called once the engine is destroyed (a failed engine may still write into it). */
void cb_agreement_close(cblob_comm *comm);
/* Whether collectives on comm start with the agreement. */
bool cb_agreement_active(const cblob_comm *comm);
/* Every rank's signature against every other's, in one small all-reduce (more only when they
 * differ). Returns what the call that asked should return: CBLOB_OK when every rank agrees (or
 * the agreement is not active); this rank's own refusal, its message kept, when it refused; when
 * the ranks differ, the same status and message on every rank, naming the first difference
 * between rank 0 and the lowest rank that differs from it (CBLOB_ERR_INVALID_ARGUMENT,
 * CBLOB_ERR_DTYPE, CBLOB_ERR_SHAPE, or the status of a rank that refused), leaving the
 * communicator usable; an engine or device failure breaks the communicator. */
cblob_status cb_agree(cblob_comm *comm, const cb_signature *mine);

/* Drops one holder; the last frees the communicator and calls the engine's destroy. */
void cb_comm_release(cblob_comm *comm);
/* Frees the parked requests' memory; called once the engine is destroyed. */
void cb_comm_free_parked(cblob_comm *comm);

/* Arenas (arena.c). A blob made by cblob_arena_create carries its members; a collective brings
 * each current member's values into its slice first (cb_param_arena_gather) and makes the slice the
 * member's current copy afterwards (cb_param_arena_scatter); both do nothing for other blobs and
 * for the arena's other part. */
cblob_status cb_param_arena_gather(cblob_blob *blob, cblob_part part);
cblob_status cb_param_arena_scatter(cblob_blob *blob, cblob_part part);
/* How many blobs the arena blob was made of, and its i-th one while it is still a member (NULL
 * once it left: reshaped beyond its slice, or given other memory). */
int64_t cb_param_arena_count(const cblob_blob *arena_blob);
const cblob_blob *cb_param_arena_current_member(const cblob_blob *arena_blob, int64_t i);

#endif
