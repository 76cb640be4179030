/* SPDX-License-Identifier: BSD-2-Clause */
#include "mpi_engine.h"
#include "alloc.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int64_t cbm_max_chunk = INT_MAX;

struct cbm_engine {
    MPI_Comm comm; /* ours: a duplicate of the caller's, with MPI_ERRORS_RETURN */
    int rank, size;
};

/* One collective: the MPI requests of its chunks (one, unless the count exceeds cbm_max_chunk),
 * and room for their statuses, in one allocation. */
typedef struct cbm_pending {
    int count;
    MPI_Status *statuses;
    MPI_Request requests[];
} cbm_pending;

static cblob_status fail(cblob_status status, char *message, size_t message_size, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
static cblob_status fail(cblob_status status, char *message, size_t message_size, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(message, message_size, format, args);
    va_end(args);
    return status;
}

/* "<what> failed: <MPI's text> (MPI error class <n>)" for an MPI call that returned `code`. */
static cblob_status mpi_fail(const char *what, int code, char *message, size_t message_size)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
        snprintf(text, sizeof text, "unknown MPI error code %d", code);
    int error_class = code;
    MPI_Error_class(code, &error_class);
    return fail(CBLOB_ERR_COMM, message, message_size, "%s failed: %s (MPI error class %d)", what, text, error_class);
}

static cblob_status check_usable(MPI_Comm comm, char *message, size_t message_size)
{
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized)
        return fail(CBLOB_ERR_STATE, message, message_size, "MPI is already finalized");
    if (!initialized)
        return fail(CBLOB_ERR_STATE, message, message_size, "MPI is not initialised: call MPI_Init first");
    if (comm == MPI_COMM_NULL)
        return fail(CBLOB_ERR_INVALID_ARGUMENT, message, message_size, "comm is MPI_COMM_NULL");
    int inter = 0;
    const int code = MPI_Comm_test_inter(comm, &inter);
    if (code != MPI_SUCCESS)
        return mpi_fail("MPI_Comm_test_inter", code, message, message_size);
    if (inter)
        return fail(CBLOB_ERR_INVALID_ARGUMENT, message, message_size,
                    "comm is an inter-communicator; collectives need an intra-communicator");
    return CBLOB_OK;
}

cblob_status cbm_engine_create(MPI_Comm comm, cbm_engine **out, char *message, size_t message_size)
{
    const cblob_status usable = check_usable(comm, message, message_size);
    if (usable != CBLOB_OK)
        return usable;
    cbm_engine *engine = cb_calloc(1, sizeof *engine);
    if (engine == NULL)
        return fail(CBLOB_ERR_OUT_OF_MEMORY, message, message_size, "out of memory for the MPI engine");
    /* A communicator of our own: our collectives never match the caller's, and its error handler
     * is ours to set. (MPI_Comm_dup itself reports through the caller's handler, which aborts by
     * default: only the caller can change that.) */
    engine->comm = MPI_COMM_NULL;
    int code = MPI_Comm_dup(comm, &engine->comm);
    const char *what = "MPI_Comm_dup";
    if (code == MPI_SUCCESS) {
        what = "MPI_Comm_set_errhandler";
        code = MPI_Comm_set_errhandler(engine->comm, MPI_ERRORS_RETURN);
    }
    if (code == MPI_SUCCESS) {
        MPI_Comm_rank(engine->comm, &engine->rank);
        MPI_Comm_size(engine->comm, &engine->size);
        *out = engine;
        return CBLOB_OK;
    }
    if (engine->comm != MPI_COMM_NULL)
        MPI_Comm_free(&engine->comm);
    free(engine);
    return mpi_fail(what, code, message, message_size);
}

void cbm_engine_destroy(void *state)
{
    cbm_engine *engine = state;
    int finalized = 0;
    MPI_Finalized(&finalized);
    /* After MPI_Finalize no MPI call is allowed: the communicator went with MPI. */
    if (!finalized)
        MPI_Comm_free(&engine->comm);
    free(engine);
}

int32_t cbm_engine_rank(const cbm_engine *engine)
{
    return engine->rank;
}

int32_t cbm_engine_size(const cbm_engine *engine)
{
    return engine->size;
}

/* cblob's dtypes and MPI's datatypes, in one place. */
static MPI_Datatype mpi_datatype(cblob_dtype dtype)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: return MPI_FLOAT;
    case CBLOB_DTYPE_FLOAT64: return MPI_DOUBLE;
    case CBLOB_DTYPE_INT32: return MPI_INT32_T;
    case CBLOB_DTYPE_UINT32: return MPI_UINT32_T;
    }
    return MPI_DATATYPE_NULL;
}

uint32_t cbm_engine_dtypes(void)
{
    uint32_t dtypes = 0;
    for (int dtype = 0; dtype < 32; ++dtype)
        if (mpi_datatype((cblob_dtype)dtype) != MPI_DATATYPE_NULL)
            dtypes |= 1u << dtype;
    return dtypes;
}

/* The pending collective for `count` elements: one request per chunk, none started yet. */
static cblob_status new_pending(int64_t count, cbm_pending **out, char *message, size_t message_size)
{
    if (count < 0)
        return fail(CBLOB_ERR_INVALID_ARGUMENT, message, message_size, "negative element count %lld", (long long)count);
    const int64_t chunks = count == 0 ? 1 : (count - 1) / cbm_max_chunk + 1;
    if (chunks > INT_MAX)
        return fail(CBLOB_ERR_OVERFLOW, message, message_size, "%lld elements need too many MPI calls", (long long)count);
    cbm_pending *pending = cb_malloc(sizeof *pending + (size_t)chunks * (sizeof(MPI_Request) + sizeof(MPI_Status)));
    if (pending == NULL)
        return fail(CBLOB_ERR_OUT_OF_MEMORY, message, message_size, "out of memory for %lld MPI requests",
                    (long long)chunks);
    pending->count = 0;
    pending->statuses = (MPI_Status *)&pending->requests[chunks];
    *out = pending;
    return CBLOB_OK;
}

typedef int (*chunk_start_fn)(void *chunk, int count, MPI_Datatype type, int root, MPI_Comm comm,
                              MPI_Request *request);

static int start_allreduce_chunk(void *chunk, int count, MPI_Datatype type, int root, MPI_Comm comm,
                                 MPI_Request *request)
{
    (void)root;
    return MPI_Iallreduce(MPI_IN_PLACE, chunk, count, type, MPI_SUM, comm, request);
}

static int start_broadcast_chunk(void *chunk, int count, MPI_Datatype type, int root, MPI_Comm comm,
                                 MPI_Request *request)
{
    return MPI_Ibcast(chunk, count, type, root, comm, request);
}

/* One MPI call per chunk of at most cbm_max_chunk elements, in order (every rank splits alike). A
 * failure after some chunks started leaves those to MPI, as a failed wait does. */
static cblob_status start_chunked(const char *what, chunk_start_fn start, cbm_engine *engine, void *buffer,
                                  int64_t count, cblob_dtype dtype, int root, void **out_pending, char *message,
                                  size_t message_size)
{
    const MPI_Datatype type = mpi_datatype(dtype);
    if (type == MPI_DATATYPE_NULL)
        return fail(CBLOB_ERR_DTYPE, message, message_size, "%s: dtype %d has no MPI datatype", what, (int)dtype);
    cbm_pending *pending = NULL;
    const cblob_status status = new_pending(count, &pending, message, message_size);
    if (status != CBLOB_OK)
        return status;
    int type_size = 0;
    MPI_Type_size(type, &type_size);
    int64_t done = 0;
    do {
        const int64_t chunk = count - done < cbm_max_chunk ? count - done : cbm_max_chunk;
        const int code = start((char *)buffer + done * type_size, (int)chunk, type, root, engine->comm,
                               &pending->requests[pending->count]);
        if (code != MPI_SUCCESS) {
            free(pending);
            return mpi_fail(what, code, message, message_size);
        }
        ++pending->count;
        done += chunk;
    } while (done < count);
    *out_pending = pending;
    return CBLOB_OK;
}

cblob_status cbm_allreduce_sum(void *engine, void *buffer, int64_t count, cblob_dtype dtype, void **out_pending,
                               char *message, size_t message_size)
{
    return start_chunked("MPI_Iallreduce", start_allreduce_chunk, engine, buffer, count, dtype, 0, out_pending,
                         message, message_size);
}

cblob_status cbm_broadcast(void *state, void *buffer, int64_t count, cblob_dtype dtype, int32_t root,
                           void **out_pending, char *message, size_t message_size)
{
    cbm_engine *engine = state;
    if (root < 0 || root >= engine->size)
        return fail(CBLOB_ERR_OUT_OF_RANGE, message, message_size, "MPI_Ibcast: root %d is not a rank of a communicator of %d",
                    (int)root, engine->size);
    return start_chunked("MPI_Ibcast", start_broadcast_chunk, engine, buffer, count, dtype, root, out_pending,
                         message, message_size);
}

cblob_status cbm_barrier(void *state, void **out_pending, char *message, size_t message_size)
{
    cbm_engine *engine = state;
    cbm_pending *pending = NULL;
    const cblob_status status = new_pending(0, &pending, message, message_size);
    if (status != CBLOB_OK)
        return status;
    const int code = MPI_Ibarrier(engine->comm, &pending->requests[0]);
    if (code != MPI_SUCCESS) {
        free(pending);
        return mpi_fail("MPI_Ibarrier", code, message, message_size);
    }
    pending->count = 1;
    *out_pending = pending;
    return CBLOB_OK;
}

static double seconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* MPI_Testall's failure: with MPI_ERR_IN_STATUS, the first request's own error. */
static cblob_status testall_fail(int code, const cbm_pending *pending, char *message, size_t message_size)
{
    if (code == MPI_ERR_IN_STATUS)
        for (int i = 0; i < pending->count; ++i) {
            const int error = pending->statuses[i].MPI_ERROR;
            if (error != MPI_SUCCESS && error != MPI_ERR_PENDING)
                return mpi_fail("the MPI collective", error, message, message_size);
        }
    return mpi_fail("MPI_Testall", code, message, message_size);
}

/* MPI_Testall until done: each test also drives MPI's progress, which (without a progress thread)
 * only happens inside MPI calls. The loop spins as MPI_Wait does; MPI itself yields the CPU inside
 * its progress when ranks share cores (Open MPI: mpirun --oversubscribe sets mpi_yield_when_idle).
 * A yield of our own on top cost latency on a loaded machine (bench_mpi). */
static cblob_status poll(cbm_pending *pending, int64_t timeout_ms, char *message, size_t message_size)
{
    const double start = seconds_now();
    for (;;) {
        int done = 0;
        const int code = MPI_Testall(pending->count, pending->requests, &done, pending->statuses);
        if (code != MPI_SUCCESS)
            return testall_fail(code, pending, message, message_size);
        if (done)
            return CBLOB_OK;
        if (timeout_ms >= 0 && (seconds_now() - start) * 1e3 >= (double)timeout_ms)
            return fail(CBLOB_ERR_TIMEOUT, message, message_size,
                        "the MPI collective did not complete within %lld ms (a rank may have stopped, died or "
                        "called other collectives)", (long long)timeout_ms);
    }
}

cblob_status cbm_wait(void *engine, void *pending_state, int64_t timeout_ms, char *message, size_t message_size)
{
    (void)engine;
    cbm_pending *pending = pending_state;
    /* Open MPI (4.1) reports the error of a non-blocking collective's request through
     * MPI_COMM_WORLD's error handler, whichever communicator the collective ran on; the default
     * handler aborts the job. For the wait, errors return, so that they become statuses; the
     * caller's handler is back before the wait returns. */
    MPI_Errhandler callers_handler;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &callers_handler);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const cblob_status status = poll(pending, timeout_ms, message, message_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, callers_handler);
    MPI_Errhandler_free(&callers_handler);
    free(pending);
    return status;
}
