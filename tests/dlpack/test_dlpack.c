/* SPDX-License-Identifier: BSD-2-Clause */
/* DLPack export and import on the host, through the public header and the shared library
 * (conformance.md section 3): what an exported tensor says, that it is the blob's memory (no
 * copy), that it keeps that memory alive whatever happens to the blob, that its deleter runs once
 * from any thread, round trips through cblob itself, and what import takes. Bad arguments are
 * the bad-input sweep's (generated/tests/bad_input_sweep.c); the device paths are
 * test_dlpack_gpu.c's. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cblob/dlpack.h"
#include "harness.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int32_t)(sizeof DIMS(__VA_ARGS__) / sizeof(int64_t)))

typedef struct fixture {
    cblob_context *ctx;
    cblob_blob *blob;
} fixture;

static cblob_status open_fixture(fixture *f, cblob_dtype dtype, int32_t num_axes, const int64_t *dims)
{
    f->ctx = NULL;
    f->blob = NULL;
    cblob_status status = cblob_context_create(&f->ctx);
    if (status == CBLOB_OK)
        status = cblob_blob_create(f->ctx, dtype, num_axes, dims, &f->blob);
    return status;
}

#define OPEN(f, dtype, ...) open_fixture((f), (dtype), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

static void close_fixture(fixture *f)
{
    cblob_blob_destroy(f->blob);
    cblob_context_destroy(f->ctx);
}

/* Writes first + i into a float32 part. */
static cblob_status fill(cblob_blob *blob, cblob_part part, float first)
{
    void *ptr = NULL;
    int64_t count = 0;
    cblob_status status = cblob_blob_mutable_cpu_ptr(blob, part, &ptr);
    if (status == CBLOB_OK)
        status = cblob_blob_count(blob, &count);
    for (int64_t i = 0; status == CBLOB_OK && i < count; ++i)
        ((float *)ptr)[i] = first + (float)i;
    return status;
}

static double element(cblob_blob *blob, cblob_part part, int64_t i)
{
    double value = -1;
    int32_t axes = 0;
    cblob_blob_num_axes(blob, &axes);
    int64_t shape[CBLOB_MAX_AXES], index[CBLOB_MAX_AXES];
    cblob_blob_shape(blob, CBLOB_MAX_AXES, shape, &axes);
    for (int32_t a = axes - 1; a >= 0; --a) {
        index[a] = i % shape[a];
        i /= shape[a];
    }
    cblob_blob_read_element(blob, part, axes, index, &value);
    return value;
}

static const void *host_ptr(cblob_blob *blob, cblob_part part)
{
    const void *ptr = NULL;
    cblob_blob_cpu_ptr(blob, part, &ptr);
    return ptr;
}

/* Counts a caller buffer's release (cblob_blob_set_cpu_data): the memory's last holder let go. */
static atomic_int released;
static void count_release(void *ptr, void *user_data)
{
    (void)ptr;
    (void)user_data;
    atomic_fetch_add(&released, 1);
}

/* Gives the blob a caller buffer whose release is counted, so a test sees when cblob drops it. */
static cblob_status adopt(cblob_blob *blob, float *buffer, size_t bytes)
{
    atomic_store(&released, 0);
    return cblob_blob_set_cpu_data(blob, buffer, bytes, count_release, NULL);
}

TEST(export_versioned_describes_the_blob)
{
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_FLOAT32, 2, 3));
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA, 1));
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 0, &t));
    CHECK(t != NULL && t->deleter != NULL);
    CHECK_EQ_INT(t->version.major, 1);
    CHECK_EQ_INT(t->version.minor, DLPACK_MINOR_VERSION);
    CHECK_EQ_INT(t->flags, 0);
    const DLTensor *dl = &t->dl_tensor;
    CHECK_EQ_INT(dl->device.device_type, kDLCPU);
    CHECK_EQ_INT(dl->device.device_id, 0);
    CHECK_EQ_INT(dl->ndim, 2);
    CHECK_EQ_INT(dl->shape[0], 2);
    CHECK_EQ_INT(dl->shape[1], 3);
    CHECK(dl->strides == NULL);
    CHECK_EQ_INT(dl->byte_offset, 0);
    CHECK_EQ_INT(dl->dtype.code, kDLFloat);
    CHECK_EQ_INT(dl->dtype.bits, 32);
    CHECK_EQ_INT(dl->dtype.lanes, 1);
    CHECK(dl->data == host_ptr(f.blob, CBLOB_PART_DATA));
    /* The same memory both ways: no copy. */
    ((float *)dl->data)[4] = 42.5f;
    CHECK_NEAR(element(f.blob, CBLOB_PART_DATA, 4), 42.5, 0);
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA, 100));
    CHECK_NEAR(((const float *)dl->data)[5], 105, 0);
    t->deleter(t);
    CHECK_NEAR(element(f.blob, CBLOB_PART_DATA, 5), 105, 0);
    close_fixture(&f);
}

TEST(export_read_only_sets_the_flag)
{
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_FLOAT32, 4));
    CHECK_OK(fill(f.blob, CBLOB_PART_DIFF, 7));
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DIFF, CBLOB_MEMORY_HOST, 1, &t));
    CHECK_EQ_INT(t->flags & DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_READ_ONLY);
    CHECK(t->dl_tensor.data == host_ptr(f.blob, CBLOB_PART_DIFF));
    CHECK_NEAR(((const float *)t->dl_tensor.data)[3], 10, 0);
    t->deleter(t);
    close_fixture(&f);
}

TEST(export_every_dtype_with_its_dlpack_code)
{
    static const struct {
        cblob_dtype dtype;
        uint8_t code, bits;
    } expected[] = {{CBLOB_DTYPE_FLOAT32, kDLFloat, 32}, {CBLOB_DTYPE_FLOAT64, kDLFloat, 64},
                    {CBLOB_DTYPE_INT32, kDLInt, 32}, {CBLOB_DTYPE_UINT32, kDLUInt, 32}};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; ++i) {
        fixture f;
        CHECK_OK(OPEN(&f, expected[i].dtype, 3, 1, 2));
        DLManagedTensor *t = NULL;
        CHECK_OK(cblob_blob_to_dlpack_legacy(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, &t));
        CHECK_EQ_INT(t->dl_tensor.dtype.code, expected[i].code);
        CHECK_EQ_INT(t->dl_tensor.dtype.bits, expected[i].bits);
        CHECK_EQ_INT(t->dl_tensor.dtype.lanes, 1);
        CHECK_EQ_INT(t->dl_tensor.ndim, 3);
        CHECK(t->dl_tensor.strides == NULL);
        CHECK(t->manager_ctx != NULL);
        /* Round trip: the blob made from the tensor has the dtype back. */
        cblob_blob *back = NULL;
        CHECK_OK(cblob_blob_from_dlpack_legacy(f.ctx, t, &back));
        cblob_dtype dtype = 0;
        CHECK_OK(cblob_blob_dtype(back, &dtype));
        CHECK_EQ_INT(dtype, expected[i].dtype);
        CHECK(host_ptr(back, CBLOB_PART_DATA) == host_ptr(f.blob, CBLOB_PART_DATA));
        cblob_blob_destroy(back);
        close_fixture(&f);
    }
}

/* conformance.md 3.23: a 0-axis blob (count 1) exports as ndim 0. */
TEST(export_zero_axis_blob_has_ndim_0)
{
    fixture f;
    CHECK_OK(open_fixture(&f, CBLOB_DTYPE_FLOAT64, 0, NULL));
    void *ptr = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(f.blob, CBLOB_PART_DATA, &ptr));
    *(double *)ptr = 2.25;
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 1, &t));
    CHECK_EQ_INT(t->dl_tensor.ndim, 0);
    CHECK(t->dl_tensor.data == ptr);
    CHECK_NEAR(*(const double *)t->dl_tensor.data, 2.25, 0);
    t->deleter(t);
    close_fixture(&f);
}

/* conformance.md 3.10: a zero-size tensor has data NULL; importing one holds nothing. */
TEST(zero_size_tensors_have_no_data)
{
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_INT32, 2, 0, 3));
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 0, &t));
    CHECK(t->dl_tensor.data == NULL);
    CHECK_EQ_INT(t->dl_tensor.ndim, 3);
    CHECK_EQ_INT(t->dl_tensor.shape[1], 0);
    cblob_blob *back = NULL;
    CHECK_OK(cblob_blob_from_dlpack(f.ctx, t, &back)); /* deletes t: it holds nothing */
    int64_t count = -1;
    CHECK_OK(cblob_blob_count(back, &count));
    CHECK_EQ_INT(count, 0);
    CHECK(host_ptr(back, CBLOB_PART_DATA) == NULL);
    cblob_blob_destroy(back);
    close_fixture(&f);
}

/* conformance.md 3.23: a window's tensor is contiguous and its data points into the parent
 * (byte_offset 0). */
TEST(export_window_points_into_the_parent)
{
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_FLOAT32, 4, 3));
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA, 0));
    cblob_blob *window = NULL;
    CHECK_OK(cblob_window_create(f.blob, 2, &window));
    CHECK_OK(cblob_window_set_position(window, 1));
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(window, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 0, &t));
    CHECK_EQ_INT(t->dl_tensor.ndim, 2);
    CHECK_EQ_INT(t->dl_tensor.shape[0], 2);
    CHECK_EQ_INT(t->dl_tensor.byte_offset, 0);
    CHECK(t->dl_tensor.data == (const float *)host_ptr(f.blob, CBLOB_PART_DATA) + 3);
    CHECK_NEAR(((const float *)t->dl_tensor.data)[0], 3, 0);
    /* The tensor holds the memory, not the window. */
    cblob_blob_destroy(window);
    close_fixture(&f);
    CHECK_NEAR(((const float *)t->dl_tensor.data)[5], 8, 0);
    t->deleter(t);
}

/* The tensor keeps the memory alive past the blob, and the memory goes with the last holder. */
TEST(tensor_outlives_the_blob_and_frees_last)
{
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_FLOAT32, 8));
    float *buffer = calloc(8, sizeof *buffer);
    CHECK(buffer != NULL);
    CHECK_OK(adopt(f.blob, buffer, 8 * sizeof *buffer));
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA, 10));
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 1, &t));
    CHECK(t->dl_tensor.data == buffer);
    close_fixture(&f);
    CHECK_EQ_INT(atomic_load(&released), 0);
    CHECK_NEAR(((const float *)t->dl_tensor.data)[7], 17, 0);
    t->deleter(t);
    CHECK_EQ_INT(atomic_load(&released), 1);
    free(buffer);
}

/* Reshaping past capacity and sharing give the blob other memory; the tensor keeps the old. */
TEST(tensor_keeps_the_old_memory_after_reshape_and_share)
{
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_FLOAT32, 4));
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA, 1));
    DLManagedTensor *grown = NULL, *shared = NULL;
    CHECK_OK(cblob_blob_to_dlpack_legacy(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, &grown));
    CHECK_OK(cblob_blob_reshape(f.blob, 1, DIMS(400)));
    CHECK(host_ptr(f.blob, CBLOB_PART_DATA) != grown->dl_tensor.data);
    CHECK_NEAR(((const float *)grown->dl_tensor.data)[3], 4, 0);

    cblob_blob *other = NULL;
    CHECK_OK(cblob_blob_create(f.ctx, CBLOB_DTYPE_FLOAT32, 1, DIMS(400), &other));
    CHECK_OK(fill(f.blob, CBLOB_PART_DIFF, 5));
    CHECK_OK(cblob_blob_to_dlpack_legacy(f.blob, CBLOB_PART_DIFF, CBLOB_MEMORY_HOST, &shared));
    CHECK_OK(cblob_blob_share(f.blob, other, CBLOB_PART_DIFF));
    CHECK(host_ptr(f.blob, CBLOB_PART_DIFF) == host_ptr(other, CBLOB_PART_DIFF));
    CHECK_NEAR(((const float *)shared->dl_tensor.data)[399], 404, 0);
    cblob_blob_destroy(other);
    close_fixture(&f);
    grown->deleter(grown);
    shared->deleter(shared);
}

/* set_cpu_data would free the buffer a tensor views: refused until the tensor is deleted. */
TEST(set_cpu_data_waits_for_exports)
{
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_FLOAT32, 2, 2));
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA, 3));
    DLManagedTensorVersioned *a = NULL, *b = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 0, &a));
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 1, &b));
    float buffer[4] = {0};
    CHECK_ERROR(cblob_blob_set_cpu_data(f.blob, buffer, sizeof buffer, NULL, NULL), CBLOB_ERR_STATE);
    CHECK(strstr(cblob_last_error_message(), "2 DLPack tensors") != NULL);
    CHECK(host_ptr(f.blob, CBLOB_PART_DATA) == a->dl_tensor.data);
    CHECK_NEAR(element(f.blob, CBLOB_PART_DATA, 3), 6, 0);
    a->deleter(a);
    CHECK_ERROR(cblob_blob_set_cpu_data(f.blob, buffer, sizeof buffer, NULL, NULL), CBLOB_ERR_STATE);
    b->deleter(b);
    CHECK_OK(cblob_blob_set_cpu_data(f.blob, buffer, sizeof buffer, NULL, NULL));
    CHECK(host_ptr(f.blob, CBLOB_PART_DATA) == buffer);
    /* Exporting the diff does not hold the data's buffer. */
    DLManagedTensorVersioned *diff = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DIFF, CBLOB_MEMORY_HOST, 0, &diff));
    float other[4] = {0};
    CHECK_OK(cblob_blob_set_cpu_data(f.blob, other, sizeof other, NULL, NULL));
    diff->deleter(diff);
    close_fixture(&f);
}

/* Export, import: one memory, and the export's deleter runs when the imported blob lets go. */
TEST(round_trip_through_cblob_shares_memory)
{
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_FLOAT32, 3, 4));
    float *buffer = calloc(12, sizeof *buffer);
    CHECK(buffer != NULL);
    CHECK_OK(adopt(f.blob, buffer, 12 * sizeof *buffer));
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA, 0.5f));
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 0, &t));
    cblob_blob *back = NULL;
    CHECK_OK(cblob_blob_from_dlpack(f.ctx, t, &back));
    int64_t shape[CBLOB_MAX_AXES];
    int32_t axes = 0;
    CHECK_OK(cblob_blob_shape(back, CBLOB_MAX_AXES, shape, &axes));
    CHECK_EQ_INT(axes, 2);
    CHECK_EQ_INT(shape[0], 3);
    CHECK_EQ_INT(shape[1], 4);
    CHECK(host_ptr(back, CBLOB_PART_DATA) == buffer);
    cblob_head head = -1;
    CHECK_OK(cblob_blob_head(back, CBLOB_PART_DATA, &head));
    CHECK_EQ_INT(head, CBLOB_HEAD_AT_CPU);
    /* Its diff is its own, new memory. */
    CHECK(host_ptr(back, CBLOB_PART_DIFF) != host_ptr(f.blob, CBLOB_PART_DIFF));
    CHECK_NEAR(element(back, CBLOB_PART_DIFF, 0), 0, 0);
    buffer[7] = -3;
    CHECK_NEAR(element(back, CBLOB_PART_DATA, 7), -3, 0);
    CHECK_OK(cblob_blob_scale(back, CBLOB_PART_DATA, 2.0));
    CHECK_NEAR(element(f.blob, CBLOB_PART_DATA, 11), 23, 0);
    close_fixture(&f);
    CHECK_EQ_INT(atomic_load(&released), 0);
    cblob_blob_destroy(back); /* the tensor's deleter, then the last holder of the buffer */
    CHECK_EQ_INT(atomic_load(&released), 1);
    free(buffer);
}

/* A blob over memory of another blob, as an export imported again makes it: rows [first,
 * first + rows) of `blob`'s data. */
static cblob_blob *alias_rows(cblob_context *ctx, cblob_blob *blob, int64_t first, int64_t rows)
{
    cblob_blob *window = NULL, *alias = NULL;
    DLManagedTensorVersioned *t = NULL;
    if (cblob_window_create(blob, rows, &window) == CBLOB_OK && cblob_window_set_position(window, first) == CBLOB_OK &&
        cblob_blob_to_dlpack(window, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 0, &t) == CBLOB_OK &&
        cblob_blob_from_dlpack(ctx, t, &alias) != CBLOB_OK)
        t->deleter(t);
    cblob_blob_destroy(window);
    return alias;
}

static int holds_index_values(cblob_blob *blob, int64_t count)
{
    for (int64_t i = 0; i < count; ++i)
        if (element(blob, CBLOB_PART_DATA, i) != (double)i)
            return 0;
    return 1;
}

/* Memory shared through DLPack is memory shared: the operations that write one blob from others
 * compare addresses, not which storage holds the memory, and refuse what overlaps (a transpose
 * in place once ran and wrote wrong values). */
TEST(operations_refuse_memory_aliased_through_an_export)
{
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_FLOAT32, 3, 3));
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA, 0));
    cblob_blob *whole = alias_rows(f.ctx, f.blob, 0, 3), *lower = alias_rows(f.ctx, f.blob, 1, 2);
    cblob_blob *upper = NULL, *row = NULL, *rows = NULL;
    CHECK(whole != NULL && lower != NULL);
    CHECK(host_ptr(whole, CBLOB_PART_DATA) == host_ptr(f.blob, CBLOB_PART_DATA));
    CHECK_OK(cblob_window_create(f.blob, 2, &upper));
    CHECK_OK(cblob_blob_create(f.ctx, CBLOB_DTYPE_FLOAT32, 2, DIMS(1, 3), &row));
    CHECK_OK(cblob_blob_create(f.ctx, CBLOB_DTYPE_FLOAT32, 2, DIMS(2, 3), &rows));

    CHECK_ERROR(cblob_blob_transpose_from(f.blob, whole, CBLOB_PART_DATA, 0, 1), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_convert_from(upper, lower, CBLOB_PART_DATA), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_add(upper, lower, CBLOB_PART_DATA), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_merge(f.blob, CBLOB_PART_DATA, 0, 2, (cblob_blob *const[]){lower, row}),
                CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_split(f.blob, CBLOB_PART_DATA, 0, 2, (cblob_blob *const[]){row, lower}),
                CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_split(whole, CBLOB_PART_DATA, 0, 2, (cblob_blob *const[]){upper, row}),
                CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(holds_index_values(f.blob, 9));
    /* Memory apart is not refused. */
    CHECK_OK(cblob_blob_split(whole, CBLOB_PART_DATA, 0, 2, (cblob_blob *const[]){row, rows}));
    CHECK_NEAR(element(rows, CBLOB_PART_DATA, 0), 3, 0);

    cblob_blob_destroy(upper);
    cblob_blob_destroy(row);
    cblob_blob_destroy(rows);
    cblob_blob_destroy(lower);
    cblob_blob_destroy(whole);
    close_fixture(&f);
}

/* A producer's tensor as NumPy or PyTorch make them: explicit row-major strides (any stride on
 * an axis of size 1), byte_offset, and a deleter counted. */
static atomic_int deleted;
static void count_delete(DLManagedTensorVersioned *self)
{
    (void)self;
    atomic_fetch_add(&deleted, 1);
}

TEST(import_takes_explicit_contiguous_strides_and_byte_offset)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static double values[1 + 2 * 3];
    for (int i = 0; i < 7; ++i)
        values[i] = i;
    int64_t shape[3] = {2, 1, 3}, strides[3] = {3, 99, 1};
    DLManagedTensorVersioned t = {
        .version = {1, 0},
        .deleter = count_delete,
        .dl_tensor = {.data = values, .device = {kDLCPU, 0}, .ndim = 3, .dtype = {kDLFloat, 64, 1},
                      .shape = shape, .strides = strides, .byte_offset = sizeof(double)},
    };
    atomic_store(&deleted, 0);
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_from_dlpack(ctx, &t, &blob));
    CHECK(host_ptr(blob, CBLOB_PART_DATA) == &values[1]);
    CHECK_NEAR(element(blob, CBLOB_PART_DATA, 5), 6, 0);
    /* cblob keeps its own copy of the shape: the producer's may change after the call. */
    shape[0] = 99;
    int64_t count = 0;
    CHECK_OK(cblob_blob_count(blob, &count));
    CHECK_EQ_INT(count, 6);
    CHECK_EQ_INT(atomic_load(&deleted), 0);
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(atomic_load(&deleted), 1);

    /* A producer without a destructor passes deleter NULL: nothing is called. */
    t.deleter = NULL;
    CHECK_OK(cblob_blob_from_dlpack(ctx, &t, &blob));
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

/* A failed import leaves the tensor the caller's: its deleter is not called (conformance.md 3.2
 * makes calling it the caller's job, safe even for another major version). */
TEST(failed_import_leaves_the_deleter_to_the_caller)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static float values[4];
    int64_t shape[1] = {4};
    DLManagedTensorVersioned t = {
        .version = {2, 0},
        .deleter = count_delete,
        .dl_tensor = {.data = values, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = shape},
    };
    atomic_store(&deleted, 0);
    cblob_blob *blob = NULL;
    CHECK_ERROR(cblob_blob_from_dlpack(ctx, &t, &blob), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "DLPack 2.0") != NULL);
    t.version.major = 1;
    t.dl_tensor.device.device_type = kDLCUDAManaged;
    CHECK_ERROR(cblob_blob_from_dlpack(ctx, &t, &blob), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "kDLCUDAManaged") != NULL);
    t.dl_tensor.device.device_type = kDLCPU;
    t.dl_tensor.dtype = (DLDataType){kDLBfloat, 16, 1};
    CHECK_ERROR(cblob_blob_from_dlpack(ctx, &t, &blob), CBLOB_ERR_DTYPE);
    CHECK(blob == NULL);
    CHECK_EQ_INT(atomic_load(&deleted), 0);
    t.deleter(&t);
    CHECK_EQ_INT(atomic_load(&deleted), 1);
    cblob_context_destroy(ctx);
}

/* Without a GPU a device export fails with the status that says why; with one it is kDLCUDA. */
TEST(device_export_needs_a_gpu)
{
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_FLOAT32, 5));
    int32_t devices = 0;
    const cblob_status machine = cblob_gpu_probe(&devices);
    DLManagedTensorVersioned *t = NULL;
    CHECK_STATUS(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_DEVICE, 0, &t), machine);
    if (machine == CBLOB_OK) {
        CHECK_EQ_INT(t->dl_tensor.device.device_type, kDLCUDA);
        t->deleter(t);
    } else {
        CHECK(t == NULL);
        cblob_head head = -1;
        CHECK_OK(cblob_blob_head(f.blob, CBLOB_PART_DATA, &head));
        CHECK_EQ_INT(head, CBLOB_HEAD_UNINITIALIZED);
    }
    close_fixture(&f);
}

/* ---- deleters from other threads ---------------------------------------------------------- */

static void *delete_versioned_on_thread(void *tensor)
{
    DLManagedTensorVersioned *t = tensor;
    t->deleter(t);
    return NULL;
}

static void *destroy_blob_on_thread(void *blob)
{
    cblob_blob_destroy(blob);
    return NULL;
}

/* A consumer may call the deleter from any thread; many tensors of one memory, deleted from
 * several threads at once, let go of it exactly once. */
TEST(deleters_run_once_from_other_threads)
{
    enum { THREADS = 8 };
    fixture f;
    CHECK_OK(OPEN(&f, CBLOB_DTYPE_FLOAT32, 64));
    float *buffer = calloc(64, sizeof *buffer);
    CHECK(buffer != NULL);
    CHECK_OK(adopt(f.blob, buffer, 64 * sizeof *buffer));
    DLManagedTensorVersioned *tensors[THREADS];
    for (int i = 0; i < THREADS; ++i)
        CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 1, &tensors[i]));
    close_fixture(&f);
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; ++i)
        CHECK(pthread_create(&threads[i], NULL, delete_versioned_on_thread, tensors[i]) == 0);
    for (int i = 0; i < THREADS; ++i)
        pthread_join(threads[i], NULL);
    CHECK_EQ_INT(atomic_load(&released), 1);
    free(buffer);
}

/* An imported tensor's deleter runs on the thread that drops the memory's last holder. */
TEST(imported_deleter_runs_once_on_the_last_holders_thread)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static int32_t values[6];
    int64_t shape[2] = {2, 3};
    DLManagedTensorVersioned t = {
        .version = {1, 3},
        .deleter = count_delete,
        .dl_tensor = {.data = values, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLInt, 32, 1}, .shape = shape},
    };
    atomic_store(&deleted, 0);
    cblob_blob *blob = NULL, *sharer = NULL;
    CHECK_OK(cblob_blob_from_dlpack(ctx, &t, &blob));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 1, DIMS(6), &sharer));
    CHECK_OK(cblob_blob_share(sharer, blob, CBLOB_PART_DATA));
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(atomic_load(&deleted), 0);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, destroy_blob_on_thread, sharer) == 0);
    pthread_join(thread, NULL);
    CHECK_EQ_INT(atomic_load(&deleted), 1);
    cblob_context_destroy(ctx);
}
