/* SPDX-License-Identifier: BSD-2-Clause */
/* The MPI engine itself (src/comm/mpi/mpi_engine.h): a collective longer than one MPI call takes
 * (INT_MAX elements) is split into chunks, in the same order on every rank. With the chunk
 * lowered to 7 elements, 1000 elements are 143 MPI calls that must give what one call gives. */
#include "mpi_engine.h"
#include "mpi_support.h"

static bool run(cbm_engine *engine, void *buffer, int64_t count, bool broadcast)
{
    char message[CBLOB_COMM_MESSAGE_BYTES];
    void *pending = NULL;
    const cblob_status started = broadcast
                                     ? cbm_broadcast(engine, buffer, count, CBLOB_DTYPE_INT32, 0, &pending, message, sizeof message)
                                     : cbm_allreduce_sum(engine, buffer, count, CBLOB_DTYPE_INT32, &pending, message, sizeof message);
    if (started != CBLOB_OK || cbm_wait(engine, pending, MPI_TEST_TIMEOUT_MS, message, sizeof message) != CBLOB_OK) {
        cbt_fail(__FILE__, __LINE__, "%s", message);
        return false;
    }
    return true;
}

TEST(collectives_split_into_chunks_give_what_one_call_gives)
{
    char message[CBLOB_COMM_MESSAGE_BYTES];
    cbm_engine *engine = NULL;
    CHECK_MSG(cbm_engine_create(MPI_COMM_WORLD, &engine, message, sizeof message) == CBLOB_OK, "%s", message);
    enum { count = 1000 };
    static int32_t whole[count], chunked[count];
    for (int broadcast = 0; broadcast < 2; ++broadcast) {
        rank_values(CBLOB_DTYPE_INT32, world_rank(), count, 3, whole);
        memcpy(chunked, whole, sizeof whole);
        CHECK(run(engine, whole, count, broadcast));
        cbm_max_chunk = 7;
        CHECK(run(engine, chunked, count, broadcast));
        cbm_max_chunk = INT32_MAX;
        CHECK_MSG(on_every_rank(memcmp(whole, chunked, sizeof whole) == 0), "%s split in chunks differs",
                  broadcast ? "broadcast" : "all-reduce");
        CHECK(same_bytes_on_every_rank(chunked, sizeof chunked));
    }
    /* And the sum is the sum: rank 0's values plus the others'. */
    int32_t expected[count], values[count];
    memset(expected, 0, sizeof expected);
    for (int rank = 0; rank < world_size(); ++rank) {
        rank_values(CBLOB_DTYPE_INT32, rank, count, 3, values);
        for (int i = 0; i < count; ++i)
            expected[i] += values[i];
    }
    rank_values(CBLOB_DTYPE_INT32, world_rank(), count, 3, chunked);
    cbm_max_chunk = 7;
    CHECK(run(engine, chunked, count, false));
    cbm_max_chunk = INT32_MAX;
    CHECK(memcmp(chunked, expected, sizeof expected) == 0);
    cbm_engine_destroy(engine);
}

TEST(a_dtype_mpi_does_not_take_is_refused_before_anything_starts)
{
    char message[CBLOB_COMM_MESSAGE_BYTES] = "";
    cbm_engine *engine = NULL;
    CHECK_MSG(cbm_engine_create(MPI_COMM_WORLD, &engine, message, sizeof message) == CBLOB_OK, "%s", message);
    CHECK_EQ_INT(cbm_engine_dtypes(), (1u << CBLOB_DTYPE_FLOAT32) | (1u << CBLOB_DTYPE_FLOAT64) |
                                          (1u << CBLOB_DTYPE_INT32) | (1u << CBLOB_DTYPE_UINT32));
    int32_t value = 0;
    void *pending = NULL;
    CHECK_EQ_INT(cbm_allreduce_sum(engine, &value, 1, (cblob_dtype)99, &pending, message, sizeof message), CBLOB_ERR_DTYPE);
    CHECK_MSG(strstr(message, "dtype 99") != NULL, "message: %s", message);
    CHECK(pending == NULL);
    cbm_engine_destroy(engine);
}

/* MPI's own errors become CBLOB_ERR_COMM with MPI's text, never an abort. An error MPI finds while
 * a collective runs: ranks that disagree on a broadcast's length (an erroneous program: here the
 * receivers' buffers are long enough for what the root sends, so Open MPI can report the
 * truncation). Open MPI reports a non-blocking collective's error through MPI_COMM_WORLD's
 * handler, which aborts by default: the wait must still return the error, and leave
 * MPI_COMM_WORLD's handler as it was. */
TEST(an_error_mpi_finds_during_a_wait_is_a_status_and_aborts_nothing)
{
    char message[CBLOB_COMM_MESSAGE_BYTES] = "";
    cbm_engine *engine = NULL;
    CHECK_MSG(cbm_engine_create(MPI_COMM_WORLD, &engine, message, sizeof message) == CBLOB_OK, "%s", message);
    enum { sent = 100000 };
    static float buffer[sent];
    void *pending = NULL;
    const int64_t count = world_rank() == 0 ? sent : 10;
    CHECK_EQ_INT(cbm_broadcast(engine, buffer, count, CBLOB_DTYPE_FLOAT32, 0, &pending, message, sizeof message),
                 CBLOB_OK);
    const cblob_status status = cbm_wait(engine, pending, MPI_TEST_TIMEOUT_MS, message, sizeof message);
    if (world_rank() == 0) {
        CHECK_MSG(status == CBLOB_OK, "%s", message);
    } else {
        CHECK_MSG(status == CBLOB_ERR_COMM, "rank %d: %s (%s)", world_rank(), cblob_status_name(status), message);
        CHECK_MSG(strstr(message, "MPI_ERR_TRUNCATE") != NULL || strstr(message, "truncated") != NULL,
                  "message: %s", message);
    }
    MPI_Errhandler handler;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler);
    CHECK(handler == MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&handler);
    cbm_engine_destroy(engine);
}
