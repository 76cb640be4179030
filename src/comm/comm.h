/* SPDX-License-Identifier: BSD-2-Clause */
/* Communicators (DESIGN.md, "Collectives are a backend, like devices"): the core reaches an
 * engine only through its cblob_comm_engine table. Engines live elsewhere: MPI in libcblob_mpi
 * (through the public cblob_comm_create), NCCL in cuda/ (through cb_comm_create_engine with a
 * stream-ordered flag). collective.c cuts lists into buckets and runs requests; arena.c lays out
 * arenas, which collectives bring up to date before and after the engine runs. */
#ifndef CBLOB_SRC_COMM_H
#define CBLOB_SRC_COMM_H

#include <stdatomic.h>
#include <stdbool.h>

#include "backend.h"
#include "blob.h"
#include "cblob/cblob.h"

struct cblob_comm {
    atomic_int holders; /* the caller's and one per live request */
    cblob_context *context;
    cblob_comm_engine engine; /* name points at name_copy */
    char name_copy[64];
    /* Device engines: the context's device; stream_ordered engines (NCCL) queue their work on
     * its stream, others get buffers whose writes have finished. NULL for host engines. */
    const cb_device *device;
    bool stream_ordered;
    int64_t timeout_ms;   /* -1: none */
    int64_t bucket_bytes; /* 0: nothing fused */
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

/* Drops one holder; the last frees the communicator and calls the engine's destroy. */
void cb_comm_release(cblob_comm *comm);
/* Frees the parked requests' memory; called once the engine is destroyed. */
void cb_comm_free_parked(cblob_comm *comm);

/* Arenas (arena.c). A blob made by cblob_arena_create carries its members; a collective brings
 * each current member's values into its slice first (cb_param_arena_gather) and makes the slice the
 * member's current copy afterwards (cb_param_arena_scatter); both do nothing for other blobs and
 * for the arena's other part. */
typedef struct cb_param_arena cb_param_arena;
void cb_param_arena_free(cb_param_arena *arena);
cblob_status cb_param_arena_gather(cblob_blob *blob, cblob_part part);
cblob_status cb_param_arena_scatter(cblob_blob *blob, cblob_part part);
/* How many blobs the arena blob was made of, and its i-th one while it is still a member (NULL
 * once it left: reshaped beyond its slice, or given other memory). */
int64_t cb_param_arena_count(const cblob_blob *arena_blob);
const cblob_blob *cb_param_arena_current_member(const cblob_blob *arena_blob, int64_t i);

#endif
