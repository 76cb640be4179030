/* SPDX-License-Identifier: BSD-2-Clause */
/* Ranks that disagree on a collective, as real programs do (a layer that differs between ranks
 * after a code change, a rank that took another branch): the last rank (rank 1 of 2, rank 3 of 4)
 * makes a different call from the others. Every rank must return the same error, whose message
 * names the first difference, the same bytes on every rank; no rank may write past a buffer (the
 * ASan build runs these too); nothing may be sent (every blob keeps its values); and the
 * communicator must stay usable: an all-reduce afterwards gives the serial sum. mpirun must end
 * by itself. Before the agreement, counts, dtypes and bucket sizes that differ overflowed a heap
 * buffer and mpirun hung; roots and ops that differ returned CBLOB_OK with ranks left apart. */
#include <inttypes.h>
#include <stdio.h>

#include "mpi_support.h"

static int odd_rank(void)
{
    return world_size() - 1;
}

static bool is_odd(void)
{
    return world_rank() == odd_rank();
}

/* A blob whose part holds this rank's rank_values(seed); NULL after a reported failure. */
static cblob_blob *filled(cblob_context *context, cblob_dtype dtype, int64_t count, cblob_part part, uint64_t seed)
{
    cblob_blob *blob = new_blob(context, dtype, count);
    if (blob == NULL)
        return NULL;
    void *values = malloc((size_t)count * dtype_size(dtype) + 8);
    rank_values(dtype, world_rank(), count, seed, values);
    if (cblob_blob_copy_in(blob, part, dtype, values, count) != CBLOB_OK) {
        cbt_fail(__FILE__, __LINE__, "cblob_blob_copy_in: %s", cblob_last_error_message());
        cblob_blob_destroy(blob);
        blob = NULL;
    }
    free(values);
    return blob;
}

/* Whether the blob's part still holds what filled() put there: nothing was sent or received. */
static bool still_holds(cblob_blob *blob, cblob_part part, uint64_t seed)
{
    int64_t count = 0;
    cblob_dtype dtype = CBLOB_DTYPE_FLOAT32;
    const void *got = NULL;
    if (cblob_blob_count(blob, &count) != CBLOB_OK || cblob_blob_dtype(blob, &dtype) != CBLOB_OK ||
        cblob_blob_cpu_ptr(blob, part, &got) != CBLOB_OK)
        return false;
    void *expected = malloc((size_t)count * dtype_size(dtype) + 8);
    rank_values(dtype, world_rank(), count, seed, expected);
    const bool same = memcmp(got, expected, (size_t)count * dtype_size(dtype)) == 0;
    free(expected);
    if (!same)
        cbt_fail(__FILE__, __LINE__, "rank %d: a blob's values changed in a refused collective", world_rank());
    return same;
}

/* Whether every rank's message is rank 0's after the name of the call (which differs where the
 * ranks called different ones), leaving out a rank with `own` set (the rank that refused its
 * arguments keeps its own message). */
static bool same_message_as_rank_0(bool own)
{
    char mine[1024] = {0}, rank_0s[1024] = {0};
    const char *named = strstr(cblob_last_error_message(), ": ");
    snprintf(mine, sizeof mine, "%s", named != NULL ? named : cblob_last_error_message());
    if (world_rank() == 0)
        memcpy(rank_0s, mine, sizeof mine);
    MPI_Bcast(rank_0s, (int)sizeof rank_0s, MPI_CHAR, 0, MPI_COMM_WORLD);
    const bool same = own || memcmp(mine, rank_0s, sizeof mine) == 0;
    if (!same)
        cbt_fail(__FILE__, __LINE__, "rank %d: the ranks' messages differ: this rank's \"%s\", rank 0's \"%s\"",
                 world_rank(), mine, rank_0s);
    return on_every_rank(same);
}

/* The refusal every rank must give: `want`, with a message that contains `needle` and is the same
 * on every rank (but the one that refused its own arguments, `own`). */
static bool refused_alike(cblob_status got, cblob_status want, const char *needle, bool own)
{
    bool ok = true;
    if (got != want) {
        cbt_fail(__FILE__, __LINE__, "rank %d: %s, expected %s (message: %s)", world_rank(), cblob_status_name(got),
                 cblob_status_name(want), cblob_last_error_message());
        ok = false;
    } else if (strstr(cblob_last_error_message(), needle) == NULL) {
        cbt_fail(__FILE__, __LINE__, "rank %d: the message \"%s\" does not say \"%s\"", world_rank(),
                 cblob_last_error_message(), needle);
        ok = false;
    }
    return on_every_rank(ok) && same_message_as_rank_0(own);
}

/* The communicator still works after the refusal: an int32 all-reduce gives the exact serial sum. */
static bool still_usable(test_comm *tc)
{
    const int64_t count = 1000;
    cblob_blob *blob = filled(tc->context, CBLOB_DTYPE_INT32, count, CBLOB_PART_DIFF, 77);
    bool ok = blob != NULL && cblob_comm_allreduce(tc->comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM) == CBLOB_OK;
    if (!ok)
        cbt_fail(__FILE__, __LINE__, "rank %d: the all-reduce after the refusal: %s", world_rank(),
                 cblob_last_error_message());
    const int32_t *sum = NULL;
    if (ok && cblob_blob_cpu_ptr(blob, CBLOB_PART_DIFF, (const void **)&sum) == CBLOB_OK) {
        int32_t *values = malloc((size_t)count * sizeof *values);
        for (int64_t i = 0; i < count && ok; ++i) {
            int64_t expected = 0;
            for (int rank = 0; rank < world_size(); ++rank) {
                rank_values(CBLOB_DTYPE_INT32, rank, count, 77, values);
                expected += values[i];
            }
            if (sum[i] != expected) {
                cbt_fail(__FILE__, __LINE__, "rank %d, element %" PRId64 ": %d, serial sum %" PRId64, world_rank(), i,
                         (int)sum[i], expected);
                ok = false;
            }
        }
        free(values);
    }
    cblob_blob_destroy(blob);
    return on_every_rank(ok);
}

static char needle[256];

TEST(allreduce_of_counts_that_differ_fails_on_every_rank_naming_both)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    const int64_t count = is_odd() ? 100000 : 10;
    cblob_blob *blob = filled(tc.context, CBLOB_DTYPE_FLOAT32, count, CBLOB_PART_DIFF, 1);
    CHECK(blob != NULL);
    cblob_comm_request *request = NULL;
    const cblob_status status =
        cblob_comm_allreduce_start(tc.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM, &request);
    snprintf(needle, sizeof needle, "blobs[0]: rank %d has 100000 float32, rank 0 10 float32", odd_rank());
    CHECK(refused_alike(status, CBLOB_ERR_SHAPE, needle, false));
    CHECK(request == NULL);
    CHECK(on_every_rank(still_holds(blob, CBLOB_PART_DIFF, 1)));
    CHECK(still_usable(&tc));
    cblob_blob_destroy(blob);
    test_comm_close(&tc);
}

TEST(allreduce_of_dtypes_that_differ_fails_on_every_rank_naming_both)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    const cblob_dtype dtype = is_odd() ? CBLOB_DTYPE_FLOAT64 : CBLOB_DTYPE_FLOAT32;
    cblob_blob *blob = filled(tc.context, dtype, 1000, CBLOB_PART_DIFF, 2);
    CHECK(blob != NULL);
    const cblob_status status = cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM);
    snprintf(needle, sizeof needle, "blobs[0]: rank %d has 1000 float64, rank 0 1000 float32", odd_rank());
    CHECK(refused_alike(status, CBLOB_ERR_DTYPE, needle, false));
    CHECK(on_every_rank(still_holds(blob, CBLOB_PART_DIFF, 2)));
    CHECK(still_usable(&tc));
    cblob_blob_destroy(blob);
    test_comm_close(&tc);
}

TEST(bucket_sizes_that_differ_fail_on_every_rank_naming_both)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    enum { N = 50 };
    cblob_blob *blobs[N];
    for (int b = 0; b < N; ++b)
        CHECK((blobs[b] = filled(tc.context, CBLOB_DTYPE_FLOAT32, 100, CBLOB_PART_DIFF, 10 + (uint64_t)b)) != NULL);
    if (is_odd())
        CHECK_OK(cblob_comm_set_bucket_bytes(tc.comm, 1024));
    const cblob_status status = cblob_comm_allreduce(tc.comm, blobs, N, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM);
    snprintf(needle, sizeof needle, "rank %d fuses up to 1024 bytes per bucket, rank 0 up to %d", odd_rank(),
             CBLOB_COMM_DEFAULT_BUCKET_BYTES);
    CHECK(refused_alike(status, CBLOB_ERR_INVALID_ARGUMENT, needle, false));
    for (int b = 0; b < N; ++b)
        CHECK(on_every_rank(still_holds(blobs[b], CBLOB_PART_DIFF, 10 + (uint64_t)b)));
    CHECK_OK(cblob_comm_set_bucket_bytes(tc.comm, CBLOB_COMM_DEFAULT_BUCKET_BYTES));
    CHECK(still_usable(&tc));
    for (int b = 0; b < N; ++b)
        cblob_blob_destroy(blobs[b]);
    test_comm_close(&tc);
}

TEST(broadcast_from_roots_that_differ_fails_instead_of_leaving_the_ranks_apart)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    cblob_blob *weights = filled(tc.context, CBLOB_DTYPE_FLOAT32, 2000, CBLOB_PART_DATA, 3);
    CHECK(weights != NULL);
    const int32_t root = is_odd() ? odd_rank() : 0;
    const cblob_status status = cblob_comm_broadcast(tc.comm, &weights, 1, CBLOB_PART_DATA, root);
    snprintf(needle, sizeof needle, "rank %d broadcasts from root %d, rank 0 from root 0", odd_rank(), odd_rank());
    CHECK(refused_alike(status, CBLOB_ERR_INVALID_ARGUMENT, needle, false));
    CHECK(on_every_rank(still_holds(weights, CBLOB_PART_DATA, 3)));
    CHECK(still_usable(&tc));
    cblob_blob_destroy(weights);
    test_comm_close(&tc);
}

TEST(allreduce_ops_that_differ_fail_on_every_rank_naming_both)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    cblob_blob *blob = filled(tc.context, CBLOB_DTYPE_FLOAT64, 500, CBLOB_PART_DIFF, 4);
    CHECK(blob != NULL);
    const cblob_reduce_op op = is_odd() ? CBLOB_REDUCE_AVERAGE : CBLOB_REDUCE_SUM;
    const cblob_status status = cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DIFF, op);
    snprintf(needle, sizeof needle, "rank %d averages, rank 0 sums", odd_rank());
    CHECK(refused_alike(status, CBLOB_ERR_INVALID_ARGUMENT, needle, false));
    CHECK(on_every_rank(still_holds(blob, CBLOB_PART_DIFF, 4)));
    CHECK(still_usable(&tc));
    cblob_blob_destroy(blob);
    test_comm_close(&tc);
}

TEST(an_allreduce_met_by_a_broadcast_fails_on_every_rank_naming_both)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    cblob_blob *blob = filled(tc.context, CBLOB_DTYPE_FLOAT32, 300, CBLOB_PART_DATA, 5);
    CHECK(blob != NULL);
    const cblob_status status = is_odd() ? cblob_comm_broadcast(tc.comm, &blob, 1, CBLOB_PART_DATA, 0)
                                         : cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DATA, CBLOB_REDUCE_SUM);
    snprintf(needle, sizeof needle, "rank %d calls a broadcast, rank 0 an all-reduce", odd_rank());
    CHECK(refused_alike(status, CBLOB_ERR_INVALID_ARGUMENT, needle, false));
    CHECK(on_every_rank(still_holds(blob, CBLOB_PART_DATA, 5)));
    CHECK(still_usable(&tc));
    cblob_blob_destroy(blob);
    test_comm_close(&tc);
}

/* The last rank makes the same two collectives in the other order: each fails on every rank. */
TEST(collectives_in_another_order_fail_one_by_one_on_every_rank)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    cblob_blob *gradients = filled(tc.context, CBLOB_DTYPE_FLOAT32, 4000, CBLOB_PART_DIFF, 6);
    cblob_blob *weights = filled(tc.context, CBLOB_DTYPE_FLOAT32, 4000, CBLOB_PART_DATA, 7);
    CHECK(gradients != NULL && weights != NULL);
    for (int step = 0; step < 2; ++step) {
        const bool reduce = is_odd() ? step == 1 : step == 0;
        const cblob_status status =
            reduce ? cblob_comm_allreduce(tc.comm, &gradients, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM)
                   : cblob_comm_broadcast(tc.comm, &weights, 1, CBLOB_PART_DATA, 0);
        snprintf(needle, sizeof needle, "rank %d calls %s, rank 0 %s", odd_rank(),
                 step == 0 ? "a broadcast" : "an all-reduce", step == 0 ? "an all-reduce" : "a broadcast");
        CHECK(refused_alike(status, CBLOB_ERR_INVALID_ARGUMENT, needle, false));
    }
    CHECK(on_every_rank(still_holds(gradients, CBLOB_PART_DIFF, 6) && still_holds(weights, CBLOB_PART_DATA, 7)));
    CHECK(still_usable(&tc));
    cblob_blob_destroy(gradients);
    cblob_blob_destroy(weights);
    test_comm_close(&tc);
}

TEST(a_barrier_met_by_an_allreduce_fails_on_every_rank_naming_both)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    cblob_blob *blob = filled(tc.context, CBLOB_DTYPE_FLOAT32, 64, CBLOB_PART_DIFF, 8);
    CHECK(blob != NULL);
    const cblob_status status = is_odd() ? cblob_comm_barrier(tc.comm)
                                         : cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM);
    snprintf(needle, sizeof needle, "rank %d calls a barrier, rank 0 an all-reduce", odd_rank());
    CHECK(refused_alike(status, CBLOB_ERR_INVALID_ARGUMENT, needle, false));
    CHECK(on_every_rank(still_holds(blob, CBLOB_PART_DIFF, 8)));
    CHECK(still_usable(&tc));
    cblob_blob_destroy(blob);
    test_comm_close(&tc);
}

/* A rank that took another branch and asks for the average of an integer blob refuses its own
 * arguments; the others learn why instead of waiting for it. */
TEST(a_rank_that_refuses_its_arguments_fails_every_rank_with_its_status)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    const cblob_dtype dtype = is_odd() ? CBLOB_DTYPE_INT32 : CBLOB_DTYPE_FLOAT32;
    cblob_blob *blob = filled(tc.context, dtype, 256, CBLOB_PART_DIFF, 9);
    CHECK(blob != NULL);
    const cblob_status status = cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_AVERAGE);
    const char *reason = "blobs[0] is int32: an average is defined for float dtypes only";
    if (is_odd())
        snprintf(needle, sizeof needle, "cblob_comm_allreduce: %s", reason);
    else
        snprintf(needle, sizeof needle, "rank %d refused an all-reduce (CBLOB_ERR_DTYPE: %s)", odd_rank(), reason);
    CHECK(refused_alike(status, CBLOB_ERR_DTYPE, needle, is_odd()));
    CHECK(on_every_rank(still_holds(blob, CBLOB_PART_DIFF, 9)));
    CHECK(still_usable(&tc));
    cblob_blob_destroy(blob);
    test_comm_close(&tc);
}

/* A whole net's list that differs in two places: the first is named. */
TEST(the_first_difference_in_a_long_list_is_named)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    enum { N = 200 };
    cblob_blob *blobs[N];
    for (int b = 0; b < N; ++b) {
        const int64_t count = is_odd() && b == 150 ? 65 : 64;
        const cblob_dtype dtype = is_odd() && b == 170 ? CBLOB_DTYPE_FLOAT64 : CBLOB_DTYPE_FLOAT32;
        CHECK((blobs[b] = filled(tc.context, dtype, count, CBLOB_PART_DIFF, 100 + (uint64_t)b)) != NULL);
    }
    const cblob_status status = cblob_comm_allreduce(tc.comm, blobs, N, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM);
    snprintf(needle, sizeof needle, "blobs[150]: rank %d has 65 float32, rank 0 64 float32", odd_rank());
    CHECK(refused_alike(status, CBLOB_ERR_SHAPE, needle, false));
    for (int b = 0; b < N; ++b)
        CHECK(on_every_rank(still_holds(blobs[b], CBLOB_PART_DIFF, 100 + (uint64_t)b)));
    CHECK(still_usable(&tc));
    for (int b = 0; b < N; ++b)
        cblob_blob_destroy(blobs[b]);
    test_comm_close(&tc);
}

/* Every rank but rank 0 differs, each its own way: the message names the lowest, rank 1. */
TEST(the_lowest_rank_that_differs_is_named)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    cblob_blob *blob = filled(tc.context, CBLOB_DTYPE_FLOAT32, 10 + world_rank(), CBLOB_PART_DIFF, 11);
    CHECK(blob != NULL);
    const cblob_status status = cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM);
    CHECK(refused_alike(status, CBLOB_ERR_SHAPE, "blobs[0]: rank 1 has 11 float32, rank 0 10 float32", false));
    CHECK(on_every_rank(still_holds(blob, CBLOB_PART_DIFF, 11)));
    CHECK(still_usable(&tc));
    cblob_blob_destroy(blob);
    test_comm_close(&tc);
}
