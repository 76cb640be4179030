/* SPDX-License-Identifier: BSD-2-Clause */
/* Caffe's SyncedMemory on the GPU (conformance.md 1.H), GPU math (1.F), CopyFrom's mode (1.E 36)
 * and the GPU calls around them, through the public API. Built twice: against the test double
 * of the driver (suite gpu_fake, which also counts every transfer and allocation) and against
 * the machine's GPU (suite gpu_device, skipped with the reason where there is none). Each
 * state-table test runs for data and for diff. */
#include <math.h>
#include <stdint.h>

#include "gpu_support.h"

#define COUNT 37 /* not a multiple of anything a kernel might assume */

#define CHECK_HEAD(blob, part, expected) CHECK_EQ_INT(head_of((blob), (part)), (expected))

static double value_at(int64_t i, double base)
{
    return base + (double)((i * 7) % 11) - 5.0 + 0.25 * (double)(i % 3);
}

/* Writes value_at(i, base) through the host (head AT_CPU). */
static cblob_status fill(cblob_blob *blob, cblob_part part, double base)
{
    void *ptr = NULL;
    cblob_dtype dtype = 0;
    int64_t count = 0;
    cblob_status status = cblob_blob_mutable_cpu_ptr(blob, part, &ptr);
    if (status == CBLOB_OK)
        status = cblob_blob_dtype(blob, &dtype);
    if (status == CBLOB_OK)
        status = cblob_blob_count(blob, &count);
    for (int64_t i = 0; status == CBLOB_OK && i < count; ++i) {
        if (dtype == CBLOB_DTYPE_FLOAT32)
            ((float *)ptr)[i] = (float)value_at(i, base);
        else if (dtype == CBLOB_DTYPE_FLOAT64)
            ((double *)ptr)[i] = value_at(i, base);
        else if (dtype == CBLOB_DTYPE_INT32)
            ((int32_t *)ptr)[i] = (int32_t)value_at(i, base);
        else
            ((uint32_t *)ptr)[i] = (uint32_t)(value_at(i, base) + 100);
    }
    return status;
}

/* Element i through the host (moves the head as cpu_ptr does). */
static double element(cblob_blob *blob, cblob_part part, int64_t i)
{
    double value = NAN;
    cblob_blob_read_element(blob, part, 1, &i, &value);
    return value;
}

static cblob_part other_part(cblob_part part)
{
    return part == CBLOB_PART_DATA ? CBLOB_PART_DIFF : CBLOB_PART_DATA;
}

/* A test run once for data and once for diff. */
#define PART_TEST(name) \
    static void name(cblob_part part); \
    TEST(name##_data) { name(CBLOB_PART_DATA); } \
    TEST(name##_diff) { name(CBLOB_PART_DIFF); } \
    static void name(cblob_part part)

/* ---- first access (items 53, 54) -------------------------------------------------------------- */

PART_TEST(caffe_1H_54_gpu_data_from_uninitialized_allocates_zeroed_device_memory)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    const fake_cuda_counters before = gpu_counters();
    const void *dev = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, part, &dev));
    CHECK(dev != NULL);
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_GPU); /* not SYNCED, even for a read-only access */
    CHECK_HEAD(b.blob, other_part(part), CBLOB_HEAD_UNINITIALIZED);
    CHECK_TRANSFERS(before, 0, 0, 0);
    CHECK_COUNTER_DELTA(before, device_allocs, 1);
    CHECK_COUNTER_DELTA(before, memsets, 1);
    CHECK_COUNTER_DELTA(before, pinned_allocs, 0);
    for (int64_t i = 0; i < COUNT; ++i)
        CHECK(element(b.blob, part, i) == 0.0);
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_SYNCED);
    CHECK_TRANSFERS(before, 0, 1, 0);
    close_blob(&b);
}

PART_TEST(caffe_1H_54_mutable_gpu_data_from_uninitialized_allocates_zeroed_device_memory)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT64, COUNT));
    const fake_cuda_counters before = gpu_counters();
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &dev));
    CHECK(dev != NULL);
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_GPU);
    CHECK_TRANSFERS(before, 0, 0, 0);
    CHECK_COUNTER_DELTA(before, device_allocs, 1);
    CHECK_COUNTER_DELTA(before, memsets, 1);
    CHECK(element(b.blob, part, COUNT - 1) == 0.0);
    close_blob(&b);
}

PART_TEST(caffe_1H_54_cpu_data_from_uninitialized_touches_no_device)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    const fake_cuda_counters before = gpu_counters();
    const void *host = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, part, &host));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_CPU);
    CHECK_TRANSFERS(before, 0, 0, 0);
    CHECK_COUNTER_DELTA(before, device_allocs, 0);
    CHECK_COUNTER_DELTA(before, pinned_allocs, 0); /* CPU mode: plain host memory */
    close_blob(&b);
}

/* ---- HEAD_AT_CPU (items 56, 57) ---------------------------------------------------------------- */

PART_TEST(caffe_1H_host_accessors_at_cpu_are_no_ops)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(b.blob, part, 1.0));
    const void *dev = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, part, &dev)); /* a stale device copy exists */
    void *host = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(b.blob, part, &host));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_CPU);
    const fake_cuda_counters before = gpu_counters();
    const void *read = NULL;
    void *again = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, part, &read));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_CPU);
    CHECK_OK(cblob_blob_mutable_cpu_ptr(b.blob, part, &again));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_CPU);
    CHECK(read == host && again == host);
    CHECK_TRANSFERS(before, 0, 0, 0);
    close_blob(&b);
}

PART_TEST(caffe_1H_56_gpu_data_from_cpu_syncs)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(b.blob, part, 1.0));
    const void *host_before = NULL, *host_after = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, part, &host_before));
    const fake_cuda_counters before = gpu_counters();
    const void *dev = NULL, *again = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, part, &dev));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_SYNCED);
    CHECK_TRANSFERS(before, 1, 0, 0);
    CHECK_COUNTER_DELTA(before, device_allocs, 1);
    CHECK_COUNTER_DELTA(before, memsets, 0); /* about to be overwritten: not cleared first */
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, part, &again)); /* SYNCED: no-op */
    CHECK(again == dev);
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, part, &host_after)); /* SYNCED: no-op */
    CHECK(host_after == host_before);
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_SYNCED);
    CHECK_TRANSFERS(before, 1, 0, 0);
    close_blob(&b);
}

PART_TEST(caffe_1H_57_mutable_gpu_data_from_cpu_copies_and_moves_the_head)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT64, COUNT));
    CHECK_OK(fill(b.blob, part, 2.0));
    const fake_cuda_counters before = gpu_counters();
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &dev));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_GPU);
    CHECK_TRANSFERS(before, 1, 0, 0);
    /* The device copy holds the host's values: reading back brings them unchanged. */
    for (int64_t i = 0; i < COUNT; ++i)
        CHECK(element(b.blob, part, i) == value_at(i, 2.0));
    CHECK_TRANSFERS(before, 1, 1, 0);
    close_blob(&b);
}

PART_TEST(caffe_1H_56_gpu_data_reuses_the_device_buffer)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(b.blob, part, 0.0));
    const void *first = NULL, *second = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, part, &first));
    CHECK_OK(fill(b.blob, part, 3.0)); /* mutable host access: AT_CPU, device copy stale */
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_CPU);
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, part, &second));
    CHECK(second == first);
    CHECK_COUNTER_DELTA(before, device_allocs, 0);
    CHECK_TRANSFERS(before, 1, 0, 0);
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_SYNCED);
    close_blob(&b);
}

/* ---- HEAD_AT_GPU (items 55, 57) --------------------------------------------------------------- */

PART_TEST(caffe_1H_gpu_accessors_at_gpu_are_no_ops)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    void *dev = NULL, *mutable_again = NULL;
    const void *read = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &dev));
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, part, &read));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_GPU);
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &mutable_again));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_GPU);
    CHECK(read == dev && mutable_again == dev);
    CHECK_TRANSFERS(before, 0, 0, 0);
    CHECK_COUNTER_DELTA(before, device_allocs, 0);
    close_blob(&b);
}

PART_TEST(caffe_1H_55_cpu_data_from_gpu_copies_back_and_syncs)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(b.blob, part, 1.0));
    const void *host_before = NULL, *host_after = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, part, &host_before));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &dev));
    CHECK_OK(cblob_blob_scale(b.blob, part, 2.0)); /* changes the device copy only */
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_GPU);
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, part, &host_after));
    CHECK(host_after == host_before); /* the existing host buffer is reused */
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_SYNCED);
    CHECK_TRANSFERS(before, 0, 1, 0);
    CHECK_COUNTER_DELTA(before, pinned_allocs, 0);
    for (int64_t i = 0; i < COUNT; ++i)
        CHECK(((const float *)host_after)[i] == (float)value_at(i, 1.0) * 2.0f);
    close_blob(&b);
}

PART_TEST(caffe_1H_55_cpu_data_from_gpu_allocates_a_host_buffer_when_there_is_none)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT64, COUNT));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &dev));
    const fake_cuda_counters before = gpu_counters();
    const void *host = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, part, &host));
    CHECK(host != NULL);
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_SYNCED);
    CHECK_TRANSFERS(before, 0, 1, 0);
    for (int64_t i = 0; i < COUNT; ++i)
        CHECK(((const double *)host)[i] == 0.0);
    close_blob(&b);
}

PART_TEST(caffe_1H_57_mutable_cpu_data_from_gpu_copies_back_and_moves_the_head)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(b.blob, part, -4.0));
    void *dev = NULL, *host = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &dev));
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_mutable_cpu_ptr(b.blob, part, &host));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_CPU);
    CHECK_TRANSFERS(before, 0, 1, 0);
    CHECK(((float *)host)[5] == (float)value_at(5, -4.0));
    close_blob(&b);
}

/* ---- SYNCED -------------------------------------------------------------------------------------- */

PART_TEST(caffe_1H_57_synced_mutable_accessors_move_the_head_without_copying)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(b.blob, part, 0.5));
    const void *dev = NULL;
    void *host = NULL, *dev_mutable = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, part, &dev));
    fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_mutable_cpu_ptr(b.blob, part, &host));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_CPU);
    CHECK_TRANSFERS(before, 0, 0, 0);
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, part, &dev)); /* SYNCED again */
    before = gpu_counters();
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &dev_mutable));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_GPU);
    CHECK_TRANSFERS(before, 0, 0, 0);
    close_blob(&b);
}

/* ---- caller buffers (items 55, 58, 59, 62) ---------------------------------------------------------- */

static int released;
static void *released_ptr;
static void *released_user_data;
static void count_release(void *ptr, void *user_data)
{
    ++released;
    released_ptr = ptr;
    released_user_data = user_data;
}

TEST(caffe_1H_55_cpu_data_from_gpu_writes_into_the_callers_host_buffer)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    float mine[COUNT];
    for (int i = 0; i < COUNT; ++i)
        mine[i] = (float)i;
    CHECK_OK(cblob_blob_set_cpu_data(b.blob, mine, sizeof mine, NULL, NULL));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev));
    CHECK_OK(cblob_blob_scale(b.blob, CBLOB_PART_DATA, -1.0));
    CHECK(mine[3] == 3.0f); /* the host copy is stale until it is asked for */
    const void *host = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, CBLOB_PART_DATA, &host));
    CHECK(host == mine);
    CHECK(mine[3] == -3.0f);
    close_blob(&b);
}

/* Puts the data part in `head` with distinct host values (base) where a host copy exists. */
static cblob_status reach_head(cblob_blob *blob, cblob_head head, double base)
{
    const void *ptr = NULL;
    void *mutable_ptr = NULL;
    switch (head) {
    case CBLOB_HEAD_AT_CPU: return fill(blob, CBLOB_PART_DATA, base);
    case CBLOB_HEAD_AT_GPU:
        if (fill(blob, CBLOB_PART_DATA, base) != CBLOB_OK)
            return CBLOB_ERR_INTERNAL;
        return cblob_blob_mutable_gpu_ptr(blob, CBLOB_PART_DATA, &mutable_ptr);
    case CBLOB_HEAD_SYNCED:
        if (fill(blob, CBLOB_PART_DATA, base) != CBLOB_OK)
            return CBLOB_ERR_INTERNAL;
        return cblob_blob_gpu_ptr(blob, CBLOB_PART_DATA, &ptr);
    default: return CBLOB_OK;
    }
}

TEST(caffe_1H_58_set_cpu_data_from_every_state_keeps_the_device_buffer)
{
    REQUIRE_GPU();
    const cblob_head heads[] = {CBLOB_HEAD_UNINITIALIZED, CBLOB_HEAD_AT_CPU, CBLOB_HEAD_AT_GPU, CBLOB_HEAD_SYNCED};
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; ++h) {
        gpu_blob b;
        CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
        CHECK_OK(reach_head(b.blob, heads[h], 1.0));
        CHECK_HEAD(b.blob, CBLOB_PART_DATA, heads[h]);
        const void *dev_before = NULL, *dev_after = NULL;
        if (heads[h] != CBLOB_HEAD_UNINITIALIZED && heads[h] != CBLOB_HEAD_AT_CPU)
            CHECK_OK(cblob_blob_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev_before));
        float mine[COUNT];
        for (int i = 0; i < COUNT; ++i)
            mine[i] = 100.0f + (float)i;
        const fake_cuda_counters before = gpu_counters();
        CHECK_OK(cblob_blob_set_cpu_data(b.blob, mine, sizeof mine, NULL, NULL));
        CHECK_HEAD(b.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_CPU);
        CHECK_TRANSFERS(before, 0, 0, 0); /* from AT_GPU too: no copy */
        CHECK_COUNTER_DELTA(before, device_frees, 0);
        CHECK_OK(cblob_blob_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev_after));
        if (dev_before != NULL)
            CHECK(dev_after == dev_before); /* the device buffer was kept */
        CHECK_TRANSFERS(before, 1, 0, 0);  /* and the next gpu access copies the caller's buffer into it */
        CHECK_OK(cblob_blob_scale(b.blob, CBLOB_PART_DATA, 2.0));
        CHECK(element(b.blob, CBLOB_PART_DATA, 4) == 208.0);
        close_blob(&b);
    }
}

TEST(caffe_1H_59_set_gpu_data_from_every_state_keeps_the_host_buffer)
{
    REQUIRE_GPU();
    const cblob_head heads[] = {CBLOB_HEAD_UNINITIALIZED, CBLOB_HEAD_AT_CPU, CBLOB_HEAD_AT_GPU, CBLOB_HEAD_SYNCED};
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; ++h) {
        /* The external device buffer: another blob's device memory, holding 7s. */
        gpu_blob holder, b;
        CHECK_OK(open_blob(&holder, CBLOB_DTYPE_FLOAT32, COUNT));
        CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
        CHECK_OK(fill(holder.blob, CBLOB_PART_DATA, 7.0));
        void *external = NULL;
        CHECK_OK(cblob_blob_mutable_gpu_ptr(holder.blob, CBLOB_PART_DATA, &external));
        CHECK_OK(reach_head(b.blob, heads[h], 1.0));
        const void *host_before = NULL, *host_after = NULL;
        if (heads[h] == CBLOB_HEAD_AT_CPU || heads[h] == CBLOB_HEAD_SYNCED)
            host_before = (const void *)1; /* a host buffer exists; its address is read below */
        void *mutable_host = NULL;
        if (host_before != NULL) {
            CHECK_OK(cblob_blob_cpu_ptr(b.blob, CBLOB_PART_DATA, &host_before));
            CHECK_HEAD(b.blob, CBLOB_PART_DATA, heads[h]);
        }
        released = 0;
        const fake_cuda_counters before = gpu_counters();
        CHECK_OK(cblob_blob_set_gpu_data(b.blob, external, COUNT * sizeof(float), count_release, &holder));
        CHECK_HEAD(b.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_GPU);
        CHECK_TRANSFERS(before, 0, 0, 0);
        /* An owned device buffer it replaced is freed; the caller's is never. */
        CHECK_COUNTER_DELTA(before, device_frees, heads[h] == CBLOB_HEAD_AT_GPU || heads[h] == CBLOB_HEAD_SYNCED);
        const void *dev = NULL;
        CHECK_OK(cblob_blob_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev));
        CHECK(dev == external);
        CHECK_OK(cblob_blob_mutable_cpu_ptr(b.blob, CBLOB_PART_DATA, &mutable_host));
        host_after = mutable_host;
        if (host_before != NULL)
            CHECK(host_after == host_before); /* the host buffer was kept and written into */
        CHECK(((float *)mutable_host)[2] == (float)value_at(2, 7.0));
        CHECK_EQ_INT(released, 0);
        const fake_cuda_counters at_destroy = gpu_counters();
        cblob_blob_destroy(b.blob);
        CHECK_EQ_INT(released, 1);
        CHECK(released_ptr == external && released_user_data == &holder);
        CHECK_COUNTER_DELTA(at_destroy, device_frees, 0); /* the external buffer is the caller's */
        cblob_context_destroy(b.ctx);
        close_blob(&holder);
    }
}

TEST(caffe_1H_62_set_gpu_data_releases_a_replaced_buffer_once)
{
    REQUIRE_GPU();
    gpu_blob holder, b;
    CHECK_OK(open_blob(&holder, CBLOB_DTYPE_FLOAT32, 2 * COUNT));
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    void *external = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(holder.blob, CBLOB_PART_DATA, &external));
    void *second = (char *)external + COUNT * sizeof(float);
    released = 0;
    CHECK_OK(cblob_blob_set_gpu_data(b.blob, external, COUNT * sizeof(float), count_release, NULL));
    CHECK_OK(cblob_blob_set_gpu_data(b.blob, external, COUNT * sizeof(float), count_release, NULL));
    CHECK_EQ_INT(released, 0); /* handing back the buffer in use does not release it */
    CHECK_OK(cblob_blob_set_gpu_data(b.blob, second, COUNT * sizeof(float), count_release, NULL));
    CHECK_EQ_INT(released, 1);
    CHECK(released_ptr == external);
    close_blob(&b);
    CHECK_EQ_INT(released, 2);
    CHECK(released_ptr == second);
    close_blob(&holder);
}

TEST(set_gpu_data_rejects_what_is_not_device_memory_of_the_context)
{
    REQUIRE_GPU();
    gpu_blob holder, b;
    CHECK_OK(open_blob(&holder, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(b.blob, CBLOB_PART_DATA, 1.0));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(holder.blob, CBLOB_PART_DATA, &dev));
    float host[COUNT];
    released = 0;
    CHECK_ERROR(cblob_blob_set_gpu_data(b.blob, host, sizeof host, count_release, NULL), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "not device memory") != NULL);
    /* Past its allocation: the holder's buffer has COUNT floats, not COUNT from its third. */
    CHECK_ERROR(cblob_blob_set_gpu_data(b.blob, (float *)dev + 2, COUNT * sizeof(float), count_release, NULL),
                CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "fewer than size_bytes") != NULL);
    CHECK_ERROR(cblob_blob_set_gpu_data(b.blob, dev, 4, count_release, NULL), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(released, 0);
    CHECK_HEAD(b.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_CPU);
    CHECK(element(b.blob, CBLOB_PART_DATA, 3) == (double)(float)value_at(3, 1.0));
    cblob_blob *empty = NULL;
    CHECK_OK(cblob_blob_create_empty(b.ctx, CBLOB_DTYPE_FLOAT32, &empty));
    CHECK_ERROR(cblob_blob_set_gpu_data(empty, dev, COUNT * sizeof(float), count_release, NULL), CBLOB_ERR_SHAPE);
    cblob_blob_destroy(empty);
    close_blob(&b);
    close_blob(&holder);
}

TEST(caffe_1D_32_set_gpu_data_replaces_data_and_diff_after_a_shrinking_reshape)
{
    REQUIRE_GPU();
    gpu_blob holder, b;
    CHECK_OK(open_blob(&holder, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, 2 * COUNT));
    CHECK_OK(fill(b.blob, CBLOB_PART_DIFF, 1.0));
    const int64_t smaller = COUNT;
    CHECK_OK(cblob_blob_reshape(b.blob, 1, &smaller));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(holder.blob, CBLOB_PART_DATA, &dev));
    CHECK_OK(cblob_blob_set_gpu_data(b.blob, dev, COUNT * sizeof(float), NULL, NULL));
    int64_t capacity = 0;
    CHECK_OK(cblob_blob_capacity(b.blob, &capacity));
    CHECK_EQ_INT(capacity, COUNT);
    CHECK_HEAD(b.blob, CBLOB_PART_DIFF, CBLOB_HEAD_UNINITIALIZED); /* diff was replaced too, as in Caffe */
    close_blob(&b);
    close_blob(&holder);
}

/* ---- async push (item 61) ------------------------------------------------------------------------- */

PART_TEST(caffe_1H_61_async_push_from_cpu_marks_synced_at_once)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(b.blob, part, 1.5));
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_async_push(b.blob, part));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_SYNCED);
    CHECK_TRANSFERS(before, 1, 0, 0);
    CHECK_COUNTER_DELTA(before, async_copies, 1);
    if (gpu_is_deferred())
        CHECK_EQ_INT(gpu_pending_copies(), 1); /* queued, not done */
    CHECK_OK(cblob_context_synchronize(b.ctx));
    CHECK_EQ_INT(gpu_pending_copies(), 0);
    /* The device copy holds the pushed values: scale it there and read it back. */
    CHECK_OK(cblob_blob_scale(b.blob, part, 3.0));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_GPU);
    CHECK(element(b.blob, part, 6) == (double)((float)value_at(6, 1.5) * 3.0f));
    close_blob(&b);
}

PART_TEST(caffe_1H_61_async_push_without_sync_is_ordered_before_later_work_on_the_stream)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT64, COUNT));
    CHECK_OK(fill(b.blob, part, -2.0));
    CHECK_OK(cblob_blob_async_push(b.blob, part));
    double sum = 0, want = 0;
    for (int64_t i = 0; i < COUNT; ++i)
        want += fabs(value_at(i, -2.0));
    CHECK_OK(cblob_blob_asum(b.blob, part, &sum)); /* SYNCED: runs on the device, behind the copy */
    CHECK_NEAR(sum, want, 1e-9);
    close_blob(&b);
}

PART_TEST(caffe_1H_61_async_push_needs_the_head_at_cpu)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    const fake_cuda_counters before = gpu_counters();
    CHECK_ERROR(cblob_blob_async_push(b.blob, part), CBLOB_ERR_STATE); /* UNINITIALIZED */
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_UNINITIALIZED);
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &dev));
    CHECK_ERROR(cblob_blob_async_push(b.blob, part), CBLOB_ERR_STATE); /* AT_GPU */
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_GPU);
    const void *host = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, part, &host));
    CHECK_ERROR(cblob_blob_async_push(b.blob, part), CBLOB_ERR_STATE); /* SYNCED, as in Caffe */
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_SYNCED);
    CHECK_COUNTER_DELTA(before, async_copies, 0);
    cblob_blob *empty = NULL;
    CHECK_OK(cblob_blob_create_empty(b.ctx, CBLOB_DTYPE_FLOAT32, &empty));
    CHECK_ERROR(cblob_blob_async_push(empty, part), CBLOB_ERR_STATE);
    cblob_blob_destroy(empty);
    close_blob(&b);
}

/* ---- data and diff are separate (item 66) --------------------------------------------------------- */

PART_TEST(caffe_1H_66_moving_one_part_leaves_the_other)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(b.blob, other_part(part), 9.0));
    void *dev = NULL;
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &dev));
    CHECK_HEAD(b.blob, part, CBLOB_HEAD_AT_GPU);
    CHECK_HEAD(b.blob, other_part(part), CBLOB_HEAD_AT_CPU);
    CHECK_TRANSFERS(before, 0, 0, 0);
    close_blob(&b);
}

/* ---- pinned host memory (item 60) ----------------------------------------------------------------- */

PART_TEST(caffe_1H_60_host_memory_allocated_in_gpu_mode_is_pinned)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(cblob_context_set_mode(b.ctx, CBLOB_MODE_GPU));
    const fake_cuda_counters before = gpu_counters();
    const void *host = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, part, &host));
    CHECK(((const float *)host)[COUNT - 1] == 0.0f); /* zero-filled like plain memory */
    CHECK_COUNTER_DELTA(before, pinned_allocs, 1);
    close_blob(&b);
    CHECK_COUNTER_DELTA(before, pinned_frees, 1);
}

PART_TEST(caffe_1H_60_host_copy_of_device_data_in_gpu_mode_is_pinned)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT64, COUNT));
    CHECK_OK(cblob_context_set_mode(b.ctx, CBLOB_MODE_GPU));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, part, &dev));
    const fake_cuda_counters before = gpu_counters();
    const void *host = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(b.blob, part, &host));
    CHECK_COUNTER_DELTA(before, pinned_allocs, 1);
    CHECK_TRANSFERS(before, 0, 1, 0);
    close_blob(&b);
}

PART_TEST(caffe_1H_60_pinned_memory_is_freed_by_the_allocator_that_pinned_it_after_a_mode_change)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(cblob_context_set_mode(b.ctx, CBLOB_MODE_GPU));
    CHECK_OK(fill(b.blob, part, 1.0));
    CHECK_OK(cblob_context_set_mode(b.ctx, CBLOB_MODE_CPU));
    /* Plain memory for the other part now: the decision is made at allocation time. */
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(fill(b.blob, other_part(part), 2.0));
    CHECK_COUNTER_DELTA(before, pinned_allocs, 0);
    close_blob(&b);
    CHECK_COUNTER_DELTA(before, pinned_frees, 1); /* cuMemFreeHost, not free(): the double would fault */
}

/* ---- device out of memory ------------------------------------------------------------------------ */

TEST(device_out_of_memory_leaves_the_host_copy_intact)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("device out-of-memory is simulated by the test double's memory limit; a real device has none to set");
    gpu_blob b, source;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, 1024));
    CHECK_OK(open_blob(&source, CBLOB_DTYPE_FLOAT32, 1024));
    CHECK_OK(fill(b.blob, CBLOB_PART_DATA, 1.0));
    CHECK_OK(fill(source.blob, CBLOB_PART_DATA, 2.0));
    void *host_before = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(b.blob, CBLOB_PART_DATA, &host_before));
    CHECK(gpu_set_device_memory(1024)); /* less than one blob */
    const fake_cuda_counters before = gpu_counters();
    const void *dev = NULL;
    void *dev_mutable = NULL;
    CHECK_ERROR(cblob_blob_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev), CBLOB_ERR_DEVICE_OUT_OF_MEMORY);
    CHECK(strstr(cblob_last_error_message(), "host copy is unchanged") != NULL);
    CHECK_ERROR(cblob_blob_mutable_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev_mutable), CBLOB_ERR_DEVICE_OUT_OF_MEMORY);
    CHECK_ERROR(cblob_blob_async_push(b.blob, CBLOB_PART_DATA), CBLOB_ERR_DEVICE_OUT_OF_MEMORY);
    CHECK(dev == NULL && dev_mutable == NULL);
    CHECK_HEAD(b.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_CPU);
    CHECK_OK(cblob_context_set_mode(b.ctx, CBLOB_MODE_GPU));
    CHECK_ERROR(cblob_blob_copy_from(b.blob, source.blob, CBLOB_PART_DATA, 0), CBLOB_ERR_DEVICE_OUT_OF_MEMORY);
    CHECK_HEAD(b.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_CPU);
    CHECK_TRANSFERS(before, 0, 0, 0);
    void *host_after = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(b.blob, CBLOB_PART_DATA, &host_after));
    CHECK(host_after == host_before);
    for (int64_t i = 0; i < 1024; ++i)
        CHECK(((float *)host_after)[i] == (float)value_at(i, 1.0));
    /* With room again, the same blob goes to the device. */
    CHECK(gpu_set_device_memory((uint64_t)1 << 30));
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev));
    close_blob(&source);
    close_blob(&b);
}

TEST(device_out_of_memory_in_update_leaves_data_and_diff_intact)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("device out-of-memory is simulated by the test double's memory limit; a real device has none to set");
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, 256));
    CHECK_OK(fill(b.blob, CBLOB_PART_DATA, 1.0));
    CHECK_OK(fill(b.blob, CBLOB_PART_DIFF, 0.5));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev));
    CHECK(gpu_set_device_memory(1024 + 512)); /* data fits, diff does not */
    CHECK_ERROR(cblob_blob_update(b.blob), CBLOB_ERR_DEVICE_OUT_OF_MEMORY);
    CHECK_HEAD(b.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_GPU);
    CHECK_HEAD(b.blob, CBLOB_PART_DIFF, CBLOB_HEAD_AT_CPU);
    CHECK(gpu_set_device_memory((uint64_t)1 << 30));
    CHECK(element(b.blob, CBLOB_PART_DATA, 9) == (double)(float)value_at(9, 1.0));
    CHECK(element(b.blob, CBLOB_PART_DIFF, 9) == (double)(float)value_at(9, 0.5));
    close_blob(&b);
}

/* ---- copy_from follows the context's mode (item 36) --------------------------------------------------- */

PART_TEST(caffe_1E_36_copy_from_in_gpu_mode_copies_on_the_device)
{
    REQUIRE_GPU();
    gpu_blob dst, src;
    CHECK_OK(open_blob(&dst, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(open_blob(&src, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(src.blob, part, 4.0));
    CHECK_OK(fill(dst.blob, other_part(part), 1.0));
    CHECK_OK(cblob_context_set_mode(dst.ctx, CBLOB_MODE_GPU));
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_copy_from(dst.blob, src.blob, part, 0));
    CHECK_HEAD(dst.blob, part, CBLOB_HEAD_AT_GPU);
    CHECK_HEAD(src.blob, part, CBLOB_HEAD_SYNCED); /* read through gpu_data */
    CHECK_HEAD(dst.blob, other_part(part), CBLOB_HEAD_AT_CPU); /* item 37: only one part */
    CHECK_TRANSFERS(before, 1, 0, 1);
    for (int64_t i = 0; i < COUNT; ++i)
        CHECK(element(dst.blob, part, i) == (double)(float)value_at(i, 4.0));
    close_blob(&src);
    close_blob(&dst);
}

PART_TEST(caffe_1E_36_copy_from_in_cpu_mode_copies_on_the_host)
{
    REQUIRE_GPU();
    gpu_blob dst, src;
    CHECK_OK(open_blob(&dst, CBLOB_DTYPE_FLOAT64, COUNT));
    CHECK_OK(open_blob(&src, CBLOB_DTYPE_FLOAT64, COUNT));
    CHECK_OK(fill(src.blob, part, 4.0));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(src.blob, part, &dev)); /* the source's head is on the device */
    CHECK_OK(cblob_blob_mutable_gpu_ptr(dst.blob, part, &dev));
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_copy_from(dst.blob, src.blob, part, 0));
    CHECK_HEAD(dst.blob, part, CBLOB_HEAD_AT_CPU);
    CHECK_HEAD(src.blob, part, CBLOB_HEAD_SYNCED);
    CHECK_TRANSFERS(before, 0, 2, 0); /* src to the host, and dst's own device copy first */
    CHECK(element(dst.blob, part, 3) == value_at(3, 4.0));
    close_blob(&src);
    close_blob(&dst);
}

TEST(caffe_1E_36_copy_from_in_gpu_mode_with_reshape_fills_fresh_device_storage)
{
    REQUIRE_GPU();
    gpu_blob dst, src;
    CHECK_OK(open_blob(&dst, CBLOB_DTYPE_FLOAT32, 3));
    CHECK_OK(open_blob(&src, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(src.blob, CBLOB_PART_DATA, 1.0));
    CHECK_OK(cblob_context_set_mode(dst.ctx, CBLOB_MODE_GPU));
    CHECK_ERROR(cblob_blob_copy_from(dst.blob, src.blob, CBLOB_PART_DATA, 0), CBLOB_ERR_SHAPE);
    CHECK_OK(cblob_blob_copy_from(dst.blob, src.blob, CBLOB_PART_DATA, 1));
    int64_t count = 0;
    CHECK_OK(cblob_blob_count(dst.blob, &count));
    CHECK_EQ_INT(count, COUNT);
    CHECK_HEAD(dst.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_GPU);
    CHECK(element(dst.blob, CBLOB_PART_DATA, COUNT - 1) == (double)(float)value_at(COUNT - 1, 1.0));
    close_blob(&src);
    close_blob(&dst);
}

/* ---- math on the GPU path agrees with the CPU path (items 39-43) ------------------------------------ */

/* The same blob contents on the host path (ref) and on the device path (dev). */
static cblob_status twin_blobs(cblob_dtype dtype, gpu_blob *ref, gpu_blob *dev, int64_t count)
{
    cblob_status status = open_blob(ref, dtype, count);
    if (status == CBLOB_OK)
        status = open_blob(dev, dtype, count);
    for (cblob_part p = CBLOB_PART_DATA; status == CBLOB_OK && p <= CBLOB_PART_DIFF; ++p) {
        const double base = p == CBLOB_PART_DATA ? 3.0 : -1.0;
        status = fill(ref->blob, p, base);
        if (status == CBLOB_OK)
            status = fill(dev->blob, p, base);
        void *ptr = NULL;
        if (status == CBLOB_OK)
            status = cblob_blob_mutable_gpu_ptr(dev->blob, p, &ptr);
    }
    return status;
}

static double tolerance(cblob_dtype dtype, double magnitude)
{
    return (dtype == CBLOB_DTYPE_FLOAT32 ? 1e-5 : 1e-12) * (1.0 + fabs(magnitude));
}

static void math_agrees(cblob_dtype dtype)
{
    REQUIRE_GPU();
    const int64_t count = 4099;
    gpu_blob ref, dev;
    CHECK_OK(twin_blobs(dtype, &ref, &dev, count));
    for (cblob_part p = CBLOB_PART_DATA; p <= CBLOB_PART_DIFF; ++p) {
        double want = 0, got = 0;
        CHECK_OK(cblob_blob_asum(ref.blob, p, &want));
        CHECK_OK(cblob_blob_asum(dev.blob, p, &got));
        CHECK_NEAR(got, want, tolerance(dtype, want));
        CHECK_HEAD(dev.blob, p, CBLOB_HEAD_AT_GPU); /* item 40: the head does not move */
        CHECK_OK(cblob_blob_sumsq(ref.blob, p, &want));
        CHECK_OK(cblob_blob_sumsq(dev.blob, p, &got));
        CHECK_NEAR(got, want, tolerance(dtype, want));
        CHECK_OK(cblob_blob_scale(ref.blob, p, -0.75));
        CHECK_OK(cblob_blob_scale(dev.blob, p, -0.75));
        CHECK_HEAD(dev.blob, p, CBLOB_HEAD_AT_GPU);
    }
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_update(ref.blob));
    CHECK_OK(cblob_blob_update(dev.blob));
    CHECK_TRANSFERS(before, 0, 0, 0); /* both parts already on the device */
    CHECK_HEAD(ref.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_CPU);
    CHECK_HEAD(dev.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_GPU);
    for (cblob_part p = CBLOB_PART_DATA; p <= CBLOB_PART_DIFF; ++p)
        for (int64_t i = 0; i < count; i += 97) {
            const double want = element(ref.blob, p, i);
            CHECK_NEAR(element(dev.blob, p, i), want, tolerance(dtype, want));
        }
    close_blob(&ref);
    close_blob(&dev);
}

TEST(caffe_1F_39_42_gpu_math_agrees_with_the_cpu_float32) { math_agrees(CBLOB_DTYPE_FLOAT32); }
TEST(caffe_1F_39_42_gpu_math_agrees_with_the_cpu_float64) { math_agrees(CBLOB_DTYPE_FLOAT64); }

/* float32 sums are added in double on the GPU as on the CPU (the two-pass kernels, not cuBLAS,
 * which adds in float and returns a float): 2^24 + 1 + 1 + 1 is exact in double, not in float. */
TEST(caffe_1F_40_41_gpu_sums_of_float32_are_added_in_double)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, 4));
    float *host = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(b.blob, CBLOB_PART_DATA, (void **)&host));
    host[0] = 16777216.0f;
    host[1] = host[2] = host[3] = -1.0f;
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev));
    double sum = 0;
    CHECK_OK(cblob_blob_asum(b.blob, CBLOB_PART_DATA, &sum));
    CHECK_MSG(sum == 16777219.0, "asum is %.1f", sum);
    CHECK_OK(cblob_blob_mutable_cpu_ptr(b.blob, CBLOB_PART_DATA, (void **)&host));
    host[0] = 4096.0f;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev));
    CHECK_OK(cblob_blob_sumsq(b.blob, CBLOB_PART_DATA, &sum));
    CHECK_MSG(sum == 16777219.0, "sumsq is %.1f", sum);
    close_blob(&b);
}

TEST(caffe_1F_39_update_syncs_diff_to_the_device_when_data_is_there)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(b.blob, CBLOB_PART_DATA, 1.0));
    CHECK_OK(fill(b.blob, CBLOB_PART_DIFF, 2.0));
    const void *dev = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev)); /* SYNCED: Update runs on the GPU */
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_update(b.blob));
    CHECK_HEAD(b.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_GPU);
    CHECK_HEAD(b.blob, CBLOB_PART_DIFF, CBLOB_HEAD_SYNCED);
    CHECK_TRANSFERS(before, 1, 0, 0);
    CHECK(element(b.blob, CBLOB_PART_DATA, 4) == (double)((float)value_at(4, 1.0) - (float)value_at(4, 2.0)));
    close_blob(&b);
}

TEST(caffe_1F_40_42_math_on_host_data_touches_no_device)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT64, COUNT));
    CHECK_OK(cblob_context_set_mode(b.ctx, CBLOB_MODE_GPU)); /* the head decides, not the mode */
    CHECK_OK(fill(b.blob, CBLOB_PART_DATA, 1.0));
    CHECK_OK(fill(b.blob, CBLOB_PART_DIFF, 2.0));
    const fake_cuda_counters before = gpu_counters();
    double sum = 0;
    CHECK_OK(cblob_blob_asum(b.blob, CBLOB_PART_DATA, &sum));
    CHECK_OK(cblob_blob_scale(b.blob, CBLOB_PART_DIFF, 2.0));
    CHECK_OK(cblob_blob_update(b.blob));
    CHECK_HEAD(b.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_CPU);
    CHECK_TRANSFERS(before, 0, 0, 0);
    CHECK_COUNTER_DELTA(before, launches, 0);
    close_blob(&b);
}

static void integer_math_not_implemented(cblob_dtype dtype)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, dtype, COUNT));
    CHECK_OK(fill(b.blob, CBLOB_PART_DATA, 1.0));
    CHECK_OK(fill(b.blob, CBLOB_PART_DIFF, 1.0));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev));
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, CBLOB_PART_DIFF, &dev));
    const fake_cuda_counters before = gpu_counters();
    double sum = -1;
    CHECK_ERROR(cblob_blob_update(b.blob), CBLOB_ERR_NOT_IMPLEMENTED);
    CHECK_ERROR(cblob_blob_asum(b.blob, CBLOB_PART_DATA, &sum), CBLOB_ERR_NOT_IMPLEMENTED);
    CHECK_ERROR(cblob_blob_sumsq(b.blob, CBLOB_PART_DIFF, &sum), CBLOB_ERR_NOT_IMPLEMENTED);
    CHECK_ERROR(cblob_blob_scale(b.blob, CBLOB_PART_DATA, 2.0), CBLOB_ERR_NOT_IMPLEMENTED);
    CHECK(sum == -1);
    CHECK_HEAD(b.blob, CBLOB_PART_DATA, CBLOB_HEAD_AT_GPU);
    CHECK_HEAD(b.blob, CBLOB_PART_DIFF, CBLOB_HEAD_AT_GPU);
    CHECK_TRANSFERS(before, 0, 0, 0);
    CHECK_COUNTER_DELTA(before, launches, 0);
    close_blob(&b);
}

TEST(caffe_1F_43_int32_math_is_not_implemented_on_the_gpu) { integer_math_not_implemented(CBLOB_DTYPE_INT32); }
TEST(caffe_1F_43_uint32_math_is_not_implemented_on_the_gpu) { integer_math_not_implemented(CBLOB_DTYPE_UINT32); }

/* ---- contexts: device, stream, log --------------------------------------------------------------------- */

TEST(context_stream_carries_the_contexts_device_work)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    void *stream = gpu_stream_create();
    if (stream == NULL)
        SKIP("the loaded driver cannot create a stream for the test");
    void *got = (void *)1;
    CHECK_OK(cblob_context_stream(b.ctx, &got));
    CHECK(got == NULL);
    CHECK_OK(cblob_context_set_stream(b.ctx, stream));
    CHECK_OK(cblob_context_stream(b.ctx, &got));
    CHECK(got == stream);
    CHECK_OK(fill(b.blob, CBLOB_PART_DATA, 2.0));
    CHECK_OK(cblob_blob_async_push(b.blob, CBLOB_PART_DATA));
    if (gpu_is_deferred())
        CHECK_EQ_INT(gpu_pending_copies(), 1);
    /* Back to the default stream: what the old one queued is finished first. */
    CHECK_OK(cblob_context_set_stream(b.ctx, NULL));
    CHECK_EQ_INT(gpu_pending_copies(), 0);
    CHECK_OK(cblob_context_set_stream(b.ctx, stream));
    CHECK_OK(cblob_blob_scale(b.blob, CBLOB_PART_DATA, 2.0));
    CHECK(element(b.blob, CBLOB_PART_DATA, 1) == (double)((float)value_at(1, 2.0) * 2.0f));
    CHECK_OK(cblob_context_synchronize(b.ctx));
    CHECK_OK(cblob_context_set_stream(b.ctx, NULL));
    close_blob(&b);
    gpu_stream_destroy(stream);
}

TEST(context_device_is_chosen_once)
{
    REQUIRE_GPU();
    int32_t devices = 0;
    CHECK_OK(cblob_gpu_probe(&devices));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    int32_t index = -1;
    CHECK_OK(cblob_context_device(ctx, &index));
    CHECK_EQ_INT(index, 0);
    CHECK_ERROR(cblob_context_set_device(ctx, devices), CBLOB_ERR_NO_DEVICE);
    CHECK(strstr(cblob_last_error_message(), "no CUDA device") != NULL);
    CHECK_OK(cblob_context_device(ctx, &index));
    CHECK_EQ_INT(index, 0); /* a failed choice changes nothing */
    CHECK_OK(cblob_context_set_device(ctx, devices - 1));
    CHECK_OK(cblob_context_set_device(ctx, devices - 1));
    if (devices > 1) {
        CHECK_ERROR(cblob_context_set_device(ctx, 0), CBLOB_ERR_STATE);
        CHECK_OK(cblob_context_device(ctx, &index));
        CHECK_EQ_INT(index, devices - 1);
    }
    cblob_context_destroy(ctx);
}

TEST(memory_shared_across_devices_is_refused)
{
    REQUIRE_GPU();
    int32_t devices = 0;
    CHECK_OK(cblob_gpu_probe(&devices));
    if (devices < 2)
        SKIP("needs two devices (the gpu_fake suite's double is given two for this test)");
    cblob_context *first = NULL, *second = NULL;
    cblob_blob *a = NULL, *b = NULL;
    const int64_t count = COUNT;
    CHECK_OK(cblob_context_create(&first));
    CHECK_OK(cblob_context_create(&second));
    CHECK_OK(cblob_context_set_device(second, 1));
    CHECK_OK(cblob_blob_create(first, CBLOB_DTYPE_FLOAT32, 1, &count, &a));
    CHECK_OK(cblob_blob_create(second, CBLOB_DTYPE_FLOAT32, 1, &count, &b));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(a, CBLOB_PART_DATA, &dev));
    CHECK_OK(cblob_blob_share(b, a, CBLOB_PART_DATA));
    const void *other = NULL;
    CHECK_ERROR(cblob_blob_gpu_ptr(b, CBLOB_PART_DATA, &other), CBLOB_ERR_STATE);
    CHECK(strstr(cblob_last_error_message(), "lives on device 0") != NULL);
    const void *host = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(b, CBLOB_PART_DATA, &host)); /* the host side still works */
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_context_destroy(first);
    cblob_context_destroy(second);
}

TEST(context_log_starts_empty_and_clears)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    size_t length = 99;
    CHECK_OK(cblob_context_log(ctx, NULL, 0, &length));
    CHECK_EQ_INT(length, 0);
    char text[8] = "x";
    CHECK_OK(cblob_context_log(ctx, text, sizeof text, &length));
    CHECK(text[0] == '\0');
    CHECK_OK(cblob_context_clear_log(ctx));
    CHECK_OK(cblob_context_synchronize(ctx)); /* nothing queued, whatever the machine */
    cblob_context_destroy(ctx);
}

TEST(device_names_and_versions_are_reported)
{
    REQUIRE_GPU();
    size_t length = 0;
    char name[256];
    CHECK_OK(cblob_gpu_device_name(0, NULL, 0, &length));
    CHECK(length > 0 && length < sizeof name);
    CHECK_OK(cblob_gpu_device_name(0, name, sizeof name, &length));
    CHECK_EQ_INT(strlen(name), length);
    CHECK_ERROR(cblob_gpu_device_name(0, name, length, &length), CBLOB_ERR_OUT_OF_RANGE);
    int32_t driver = 0, nvrtc = 0, cublas = 0;
    CHECK_OK(cblob_gpu_versions(&driver, &nvrtc, &cublas));
    CHECK(driver >= 13000 && nvrtc >= 13000 && cublas >= 13000);
    char report[4096];
    CHECK_OK(cblob_gpu_report(report, sizeof report, &length));
    CHECK(strncmp(report, "gpu: usable", 11) == 0);
    CHECK(strstr(report, name) != NULL);
}
