/* SPDX-License-Identifier: BSD-2-Clause */
/* Collectives over MPI against serial references: every rank computes what the whole job should
 * get from the values every rank started with (rank_values is the same function everywhere), and
 * every rank must hold the same bits afterwards. */
#include <math.h>
#include <time.h>

#include "mpi_support.h"

/* The serial sum over ranks 0..size-1 of element i, in double (exact for the integer dtypes'
 * ranges; the float dtypes compare within a tolerance, since MPI adds in an order of its own). */
static void serial_sums(cblob_dtype dtype, int64_t count, uint64_t seed, double *sums, double *magnitudes)
{
    const int size = world_size();
    void *values = malloc((size_t)count * 8 + 8);
    for (int64_t i = 0; i < count; ++i)
        sums[i] = magnitudes[i] = 0;
    for (int rank = 0; rank < size; ++rank) {
        rank_values(dtype, rank, count, seed, values);
        for (int64_t i = 0; i < count; ++i) {
            double v;
            switch (dtype) {
            case CBLOB_DTYPE_FLOAT32: v = ((float *)values)[i]; break;
            case CBLOB_DTYPE_FLOAT64: v = ((double *)values)[i]; break;
            case CBLOB_DTYPE_INT32: v = ((int32_t *)values)[i]; break;
            default: v = ((uint32_t *)values)[i]; break;
            }
            sums[i] += v;
            magnitudes[i] += fabs(v);
        }
    }
    free(values);
}

static double element(cblob_dtype dtype, const void *values, int64_t i)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: return ((const float *)values)[i];
    case CBLOB_DTYPE_FLOAT64: return ((const double *)values)[i];
    case CBLOB_DTYPE_INT32: return ((const int32_t *)values)[i];
    default: return ((const uint32_t *)values)[i];
    }
}

/* Whether the all-reduced `got` is the serial sum (or mean), element by element. uint32 sums wrap
 * modulo 2^32, as C's unsigned arithmetic does. */
static bool matches_reference(cblob_dtype dtype, const void *got, int64_t count, uint64_t seed, bool average)
{
    double *sums = malloc((size_t)count * sizeof *sums + 8), *magnitudes = malloc((size_t)count * sizeof *sums + 8);
    serial_sums(dtype, count, seed, sums, magnitudes);
    const double relative = dtype == CBLOB_DTYPE_FLOAT32 ? 1e-6 : 1e-14;
    bool ok = true;
    for (int64_t i = 0; i < count && ok; ++i) {
        double expected = sums[i];
        if (dtype == CBLOB_DTYPE_UINT32)
            expected = fmod(expected, 4294967296.0);
        if (average)
            expected /= world_size();
        const double tolerance = dtype == CBLOB_DTYPE_FLOAT32 || dtype == CBLOB_DTYPE_FLOAT64
                                     ? relative * (1 + magnitudes[i]) : 0;
        if (fabs(element(dtype, got, i) - expected) > tolerance) {
            cbt_fail(__FILE__, __LINE__, "rank %d, dtype %d, element %lld: got %.17g, serial reference %.17g",
                     world_rank(), (int)dtype, (long long)i, element(dtype, got, i), expected);
            ok = false;
        }
    }
    free(sums);
    free(magnitudes);
    return ok;
}

static cblob_blob *blob_with_rank_values(cblob_context *context, cblob_dtype dtype, int64_t count, cblob_part part,
                                         uint64_t seed)
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

static const void *host_part(cblob_blob *blob, cblob_part part)
{
    const void *pointer = NULL;
    if (cblob_blob_cpu_ptr(blob, part, &pointer) != CBLOB_OK)
        cbt_fail(__FILE__, __LINE__, "cblob_blob_cpu_ptr: %s", cblob_last_error_message());
    return pointer;
}

TEST(allreduce_sum_of_every_dtype_matches_a_serial_sum_on_every_rank)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    const int64_t counts[] = {1, 1000, 4099};
    for (int d = 0; d < 4; ++d) {
        for (int c = 0; c < 3; ++c) {
            const cblob_dtype dtype = every_dtype[d];
            const uint64_t seed = (uint64_t)(d * 10 + c);
            cblob_blob *blob = blob_with_rank_values(tc.context, dtype, counts[c], CBLOB_PART_DIFF, seed);
            CHECK(blob != NULL);
            CHECK_OK(cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
            const void *sum = host_part(blob, CBLOB_PART_DIFF);
            CHECK(sum != NULL);
            CHECK(on_every_rank(matches_reference(dtype, sum, counts[c], seed, false)));
            CHECK_MSG(same_bytes_on_every_rank(sum, (size_t)counts[c] * dtype_size(dtype)),
                      "dtype %d, %lld elements: the ranks' sums differ in their bits", (int)dtype, (long long)counts[c]);
            cblob_blob_destroy(blob);
        }
    }
    test_comm_close(&tc);
}

TEST(allreduce_average_of_float_dtypes_matches_a_serial_mean_and_integers_are_refused)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    for (int d = 0; d < 4; ++d) {
        const cblob_dtype dtype = every_dtype[d];
        cblob_blob *blob = blob_with_rank_values(tc.context, dtype, 777, CBLOB_PART_DATA, 5);
        CHECK(blob != NULL);
        if (dtype == CBLOB_DTYPE_INT32 || dtype == CBLOB_DTYPE_UINT32) {
            CHECK_ERROR(cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DATA, CBLOB_REDUCE_AVERAGE), CBLOB_ERR_DTYPE);
        } else {
            CHECK_OK(cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DATA, CBLOB_REDUCE_AVERAGE));
            const void *mean = host_part(blob, CBLOB_PART_DATA);
            CHECK(mean != NULL);
            CHECK(on_every_rank(matches_reference(dtype, mean, 777, 5, true)));
            CHECK(same_bytes_on_every_rank(mean, 777 * dtype_size(dtype)));
        }
        cblob_blob_destroy(blob);
    }
    /* The refused average changed nothing and left the communicator usable. */
    cblob_blob *blob = blob_with_rank_values(tc.context, CBLOB_DTYPE_INT32, 10, CBLOB_PART_DATA, 6);
    CHECK(blob != NULL);
    CHECK_OK(cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DATA, CBLOB_REDUCE_SUM));
    CHECK(on_every_rank(matches_reference(CBLOB_DTYPE_INT32, host_part(blob, CBLOB_PART_DATA), 10, 6, false)));
    cblob_blob_destroy(blob);
    test_comm_close(&tc);
}

TEST(broadcast_of_initial_weights_from_a_root_gives_every_rank_the_roots_bits)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    const int root = world_size() - 1;
    for (int d = 0; d < 4; ++d) {
        const cblob_dtype dtype = every_dtype[d];
        const int64_t count = 2053;
        cblob_blob *weights = blob_with_rank_values(tc.context, dtype, count, CBLOB_PART_DATA, 40 + (uint64_t)d);
        CHECK(weights != NULL);
        CHECK_OK(cblob_comm_broadcast(tc.comm, &weights, 1, CBLOB_PART_DATA, root));
        const void *got = host_part(weights, CBLOB_PART_DATA);
        void *expected = malloc((size_t)count * dtype_size(dtype));
        rank_values(dtype, root, count, 40 + (uint64_t)d, expected);
        const bool same = memcmp(got, expected, (size_t)count * dtype_size(dtype)) == 0;
        free(expected);
        CHECK_MSG(on_every_rank(same), "dtype %d: a rank's weights differ from root %d's", (int)dtype, root);
        cblob_blob_destroy(weights);
    }
    CHECK_ERROR(cblob_comm_broadcast(tc.comm, (cblob_blob *[]){NULL}, 1, CBLOB_PART_DATA, 0), CBLOB_ERR_INVALID_ARGUMENT);
    test_comm_close(&tc);
}

TEST(barrier_waits_for_the_last_rank_to_arrive)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    const double late = 0.3;
    CHECK_OK(cblob_comm_barrier(tc.comm)); /* everyone is here: the clocks below start together */
    const double start = seconds_now();
    if (world_rank() == 0)
        nanosleep(&(struct timespec){.tv_nsec = (long)(late * 1e9)}, NULL);
    CHECK_OK(cblob_comm_barrier(tc.comm));
    const double waited = seconds_now() - start;
    CHECK_MSG(waited >= late * 0.9, "rank %d left the barrier after %.3f s, before rank 0 arrived (%.3f s)",
              world_rank(), waited, late);
    test_comm_close(&tc);
}

/* Many blobs' diffs in one arena, all-reduced in one call, give each blob the serial sum. */
TEST(allreduce_of_an_arena_gives_every_member_its_serial_sum)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    enum { members = 5 };
    const int64_t counts[members] = {3, 1000, 1, 257, 64};
    cblob_blob *blobs[members];
    for (int i = 0; i < members; ++i) {
        blobs[i] = blob_with_rank_values(tc.context, CBLOB_DTYPE_FLOAT32, counts[i], CBLOB_PART_DIFF, 70 + (uint64_t)i);
        CHECK(blobs[i] != NULL);
    }
    cblob_blob *arena = NULL;
    CHECK_OK(cblob_arena_create(blobs, members, CBLOB_PART_DIFF, 64, &arena));
    CHECK_OK(cblob_comm_allreduce(tc.comm, &arena, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    for (int i = 0; i < members; ++i) {
        const void *sum = host_part(blobs[i], CBLOB_PART_DIFF);
        CHECK(sum != NULL);
        CHECK_MSG(on_every_rank(matches_reference(CBLOB_DTYPE_FLOAT32, sum, counts[i], 70 + (uint64_t)i, false)),
                  "member %d", i);
        CHECK(same_bytes_on_every_rank(sum, (size_t)counts[i] * 4));
    }
    cblob_blob_destroy(arena);
    for (int i = 0; i < members; ++i)
        cblob_blob_destroy(blobs[i]);
    test_comm_close(&tc);
}

/* Fusion (buckets) moves bytes, not results: 200 small blobs fused give the serial means, the same
 * bits on every rank, and on two ranks (one addition, whatever MPI's algorithm) the bits of 200
 * calls. With more ranks MPI may add in another order for the bucket's size (cblob.h). */
TEST(fused_allreduce_of_200_blobs_matches_one_call_per_blob)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    enum { count = 200, elements = 37 };
    cblob_blob *fused[count], *alone[count];
    for (int i = 0; i < count; ++i) {
        fused[i] = blob_with_rank_values(tc.context, CBLOB_DTYPE_FLOAT32, elements, CBLOB_PART_DIFF, 100 + (uint64_t)i);
        alone[i] = blob_with_rank_values(tc.context, CBLOB_DTYPE_FLOAT32, elements, CBLOB_PART_DIFF, 100 + (uint64_t)i);
        CHECK(fused[i] != NULL && alone[i] != NULL);
    }
    CHECK_OK(cblob_comm_allreduce(tc.comm, fused, count, CBLOB_PART_DIFF, CBLOB_REDUCE_AVERAGE));
    for (int i = 0; i < count; ++i)
        CHECK_OK(cblob_comm_allreduce(tc.comm, &alone[i], 1, CBLOB_PART_DIFF, CBLOB_REDUCE_AVERAGE));
    for (int i = 0; i < count; ++i) {
        const void *a = host_part(fused[i], CBLOB_PART_DIFF), *b = host_part(alone[i], CBLOB_PART_DIFF);
        CHECK(a != NULL && b != NULL);
        if (world_size() <= 2)
            CHECK_MSG(memcmp(a, b, elements * 4) == 0, "blob %d: fused and alone differ", i);
        CHECK(on_every_rank(matches_reference(CBLOB_DTYPE_FLOAT32, a, elements, 100 + (uint64_t)i, true)));
        CHECK(on_every_rank(matches_reference(CBLOB_DTYPE_FLOAT32, b, elements, 100 + (uint64_t)i, true)));
        CHECK(same_bytes_on_every_rank(a, elements * 4));
        cblob_blob_destroy(fused[i]);
        cblob_blob_destroy(alone[i]);
    }
    test_comm_close(&tc);
}

/* A started all-reduce lets the caller work while the collective runs, and the wait finishes it
 * with the right sums, a late rank included. Without the agreement the start returns at once;
 * with it (the default) the start first waits for every rank to start the same collective. */
static void overlap_with_a_late_rank(bool agreement)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    CHECK_OK(cblob_comm_set_agreement_check(tc.comm, agreement));
    const int64_t count = 100000;
    cblob_blob *gradients = blob_with_rank_values(tc.context, CBLOB_DTYPE_FLOAT64, count, CBLOB_PART_DIFF, 9);
    CHECK(gradients != NULL);
    const double late = 0.4;
    CHECK_OK(cblob_comm_barrier(tc.comm));
    if (world_rank() == 0 && world_size() > 1)
        nanosleep(&(struct timespec){.tv_nsec = (long)(late * 1e9)}, NULL);
    const double start = seconds_now();
    cblob_comm_request *request = NULL;
    CHECK_OK(cblob_comm_allreduce_start(tc.comm, &gradients, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM, &request));
    const double started = seconds_now() - start;
    /* The work overlapping the collective: the next layer's backward pass, say. */
    double work = 0;
    for (int i = 0; i < 2000000; ++i)
        work += sqrt((double)i);
    CHECK(work > 0);
    CHECK_OK(cblob_comm_request_wait(request));
    const double finished = seconds_now() - start;
    cblob_comm_request_destroy(request);
    const bool waited_for_rank_0 = world_rank() != 0 && world_size() > 1;
    if (!agreement || !waited_for_rank_0)
        CHECK_MSG(started < 0.1, "rank %d: the start took %.3f s: it waited for the collective", world_rank(), started);
    else
        CHECK_MSG(started >= late * 0.7, "rank %d started after %.3f s, before rank 0 started", world_rank(), started);
    if (waited_for_rank_0)
        CHECK_MSG(finished >= late * 0.7, "rank %d finished after %.3f s, before rank 0 started", world_rank(), finished);
    const void *sum = host_part(gradients, CBLOB_PART_DIFF);
    CHECK(on_every_rank(matches_reference(CBLOB_DTYPE_FLOAT64, sum, count, 9, false)));
    CHECK(same_bytes_on_every_rank(sum, (size_t)count * 8));
    cblob_blob_destroy(gradients);
    test_comm_close(&tc);
}

TEST(nonblocking_allreduce_without_the_agreement_returns_at_once_and_overlaps_work)
{
    overlap_with_a_late_rank(false);
}

TEST(nonblocking_allreduce_with_the_agreement_starts_once_every_rank_has_and_overlaps_work)
{
    overlap_with_a_late_rank(true);
}
