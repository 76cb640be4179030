/* The device paths of the NeoML operations, against a test double of a GPU backend whose "device
 * memory" is host memory and whose kernels are the CPU kernels (generated/tests/
 * host_device_kernels.c). It counts every transfer, so the tests can tell that an operation ran
 * on the device copy (no transfer, head still AT_GPU) and that mappings stage exactly the range
 * they name (conformance.md 2.G item 37, without NeoML's read-from-offset-0 bug). No GPU needed. */
#include "backend.h"
#include "blob.h"
#include "context.h"
#include "neoml_test.h"

extern const cb_device_kernels cb_host_device_kernels;

static struct {
    int64_t to_device, to_host, on_device; /* bytes moved by copies of each kind */
} traffic;

static cblob_status fake_open(int32_t index)
{
    return index == 0 ? CBLOB_OK : CBLOB_ERR_NO_DEVICE;
}

static cblob_status fake_alloc(const cb_device *device, size_t bytes, void **out)
{
    (void)device;
    *out = malloc(bytes);
    return *out != NULL ? CBLOB_OK : CBLOB_ERR_DEVICE_OUT_OF_MEMORY;
}

static void fake_free(const cb_device *device, void *ptr)
{
    (void)device;
    free(ptr);
}

static cblob_status fake_zero(const cb_device *device, void *ptr, size_t bytes)
{
    (void)device;
    memset(ptr, 0, bytes);
    return CBLOB_OK;
}

static cblob_status fake_copy(const cb_device *device, void *dst, const void *src, size_t bytes, cb_copy_kind kind)
{
    (void)device;
    memcpy(dst, src, bytes);
    if (kind == CB_COPY_HOST_TO_DEVICE)
        traffic.to_device += (int64_t)bytes;
    else if (kind == CB_COPY_DEVICE_TO_HOST)
        traffic.to_host += (int64_t)bytes;
    else
        traffic.on_device += (int64_t)bytes;
    return CBLOB_OK;
}

static cblob_status fake_copy_async(const cb_device *device, void *dst, const void *src, size_t bytes, void *stream)
{
    (void)stream;
    return fake_copy(device, dst, src, bytes, CB_COPY_HOST_TO_DEVICE);
}

static cblob_status fake_synchronize(const cb_device *device, void *stream)
{
    (void)device;
    (void)stream;
    return CBLOB_OK;
}

static const cb_device_backend fake_backend = {
    .name = "the test device",
    .open = fake_open,
    .alloc = fake_alloc,
    .free = fake_free,
    .zero = fake_zero,
    .alloc_pinned = fake_alloc,
    .free_pinned = fake_free,
    .copy = fake_copy,
    .copy_async = fake_copy_async,
    .synchronize = fake_synchronize,
    .kernels = &cb_host_device_kernels,
};

/* A context whose device is the test double, as if the GPU backend had opened it. */
static cblob_context *device_context(const cb_device_backend *backend)
{
    cblob_context *ctx = NULL;
    if (cblob_context_create(&ctx) != CBLOB_OK)
        return NULL;
    ctx->device.backend = backend;
    ctx->device.index = 0;
    ctx->device_open = true;
    return ctx;
}

/* Moves a part to the device (head AT_GPU), as the GPU accessors would. */
static int to_device(cblob_blob *blob, cblob_part part)
{
    void *ptr;
    return cb_blob_device(blob, part, true, &ptr) == CBLOB_OK;
}

static cblob_head head_of(const cblob_blob *blob, cblob_part part)
{
    cblob_head head = -1;
    cblob_blob_head(blob, part, &head);
    return head;
}

/* The part's values read straight from the device copy (the double's memory is the host's). */
static double device_value(cblob_blob *blob, cblob_part part, int64_t i)
{
    void *ptr = NULL;
    cb_blob_device(blob, part, false, &ptr);
    return value_at(ptr, blob->dtype->dtype, i);
}

static void reset_traffic(void)
{
    memset(&traffic, 0, sizeof traffic);
}

TEST(device_ops_run_where_the_data_is_every_dtype)
{
    cblob_context *ctx = device_context(&fake_backend);
    CHECK(ctx != NULL);
    for (int d = 0; d < NUM_DTYPES; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        cblob_blob *a, *b, *t, *parts[2], *merged;
        CHECK_OK(cblob_blob_create_data(ctx, dtype, 2, 3, 4, &a));
        CHECK_OK(cblob_blob_create_data(ctx, dtype, 2, 3, 4, &b));
        CHECK(fill_tagged(a, CBLOB_PART_DATA, 1) && fill_tagged(b, CBLOB_PART_DATA, 2));
        CHECK(to_device(a, CBLOB_PART_DATA) && to_device(b, CBLOB_PART_DATA));
        reset_traffic();

        CHECK_OK(cblob_blob_add(a, b, CBLOB_PART_DATA));
        CHECK_OK(cblob_blob_fill_object(b, CBLOB_PART_DATA, 1, 9));
        CHECK_OK(cblob_blob_create_data(ctx, dtype, 2, 4, 3, &t));
        CHECK(to_device(t, CBLOB_PART_DATA));
        reset_traffic();
        CHECK_OK(cblob_blob_transpose_from(t, a, CBLOB_PART_DATA, CBLOB_DIM_BATCH_WIDTH, CBLOB_DIM_CHANNELS));
        CHECK_OK(cblob_blob_create_data(ctx, dtype, 2, 1, 4, &parts[0]));
        CHECK_OK(cblob_blob_create_data(ctx, dtype, 2, 2, 4, &parts[1]));
        CHECK(to_device(parts[0], CBLOB_PART_DATA) && to_device(parts[1], CBLOB_PART_DATA));
        CHECK_OK(cblob_blob_create_data(ctx, dtype, 2, 3, 4, &merged));
        CHECK(to_device(merged, CBLOB_PART_DATA));
        reset_traffic();
        CHECK_OK(cblob_blob_split(a, CBLOB_PART_DATA, CBLOB_DIM_BATCH_WIDTH, 2, parts));
        CHECK_OK(cblob_blob_merge(merged, CBLOB_PART_DATA, CBLOB_DIM_BATCH_WIDTH, 2, parts));
        /* Nothing crossed between host and device, and every head is still on the device. */
        CHECK_MSG(traffic.to_host == 0 && traffic.to_device == 0, "%s: %lld bytes to the host, %lld to the device",
                  dtype_name(dtype), (long long)traffic.to_host, (long long)traffic.to_device);
        CHECK(head_of(a, CBLOB_PART_DATA) == CBLOB_HEAD_AT_GPU && head_of(b, CBLOB_PART_DATA) == CBLOB_HEAD_AT_GPU &&
              head_of(t, CBLOB_PART_DATA) == CBLOB_HEAD_AT_GPU && head_of(merged, CBLOB_PART_DATA) == CBLOB_HEAD_AT_GPU);
        for (int i = 0; i < 24; ++i) {
            const double sum = tagged(i, 1) + tagged(i, 2);
            CHECK_EQ_INT(device_value(a, CBLOB_PART_DATA, i), sum);
            CHECK_EQ_INT(device_value(b, CBLOB_PART_DATA, i), i >= 4 && i < 8 ? 9 : tagged(i, 2)); /* object 1 of 6 */
            CHECK_EQ_INT(device_value(merged, CBLOB_PART_DATA, i), sum);
        }
        /* t(r, c, w) = a(r, w, c) for the swap of BatchWidth (3) and Channels (4). */
        for (int r = 0; r < 2; ++r)
            for (int c = 0; c < 4; ++c)
                for (int w = 0; w < 3; ++w)
                    CHECK_EQ_INT(device_value(t, CBLOB_PART_DATA, (r * 4 + c) * 3 + w),
                                 tagged((r * 3 + w) * 4 + c, 1) + tagged((r * 3 + w) * 4 + c, 2));
        CHECK_EQ_INT(device_value(parts[1], CBLOB_PART_DATA, 0), tagged(4, 1) + tagged(4, 2));
        cblob_blob *all[] = {a, b, t, parts[0], parts[1], merged};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
            cblob_blob_destroy(all[i]);
    }
    cblob_context_destroy(ctx);
}

TEST(device_new_blobs_are_made_on_the_device)
{
    cblob_context *ctx = device_context(&fake_backend);
    CHECK(ctx != NULL);
    cblob_blob *a, *t, *clone;
    CHECK_OK(cblob_blob_create_matrix(ctx, CBLOB_DTYPE_FLOAT32, 3, 5, &a));
    CHECK(fill_tagged(a, CBLOB_PART_DATA, 1));
    CHECK(to_device(a, CBLOB_PART_DATA));
    reset_traffic();
    CHECK_OK(cblob_blob_transposed(a, 0, 1, &t));
    CHECK_OK(cblob_blob_clone(a, CBLOB_DTYPE_INT32, &clone));
    CHECK(traffic.to_host == 0 && traffic.to_device == 0);
    CHECK_EQ_INT(head_of(t, CBLOB_PART_DATA), CBLOB_HEAD_AT_GPU);
    CHECK_EQ_INT(head_of(clone, CBLOB_PART_DATA), CBLOB_HEAD_AT_GPU);
    CHECK_EQ_INT(head_of(t, CBLOB_PART_DIFF), CBLOB_HEAD_UNINITIALIZED); /* a's diff was never accessed */
    CHECK_EQ_INT(device_value(t, CBLOB_PART_DATA, 1), tagged(5, 1));
    CHECK_EQ_INT(device_value(clone, CBLOB_PART_DATA, 14), tagged(14, 1));
    cblob_blob_destroy(clone);
    cblob_blob_destroy(t);
    cblob_blob_destroy(a);
    cblob_context_destroy(ctx);
}

TEST(device_typed_copies_move_only_the_blob)
{
    cblob_context *ctx = device_context(&fake_backend);
    CHECK(ctx != NULL);
    cblob_blob *blob;
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_FLOAT64, 8, &blob));
    CHECK(to_device(blob, CBLOB_PART_DIFF));
    reset_traffic();
    double in[8], out[8];
    for (int i = 0; i < 8; ++i)
        in[i] = i * 0.5;
    CHECK_OK(cblob_blob_copy_in(blob, CBLOB_PART_DIFF, CBLOB_DTYPE_FLOAT64, in, 8));
    CHECK_OK(cblob_blob_copy_out(blob, CBLOB_PART_DIFF, CBLOB_DTYPE_FLOAT64, out, 8));
    CHECK(traffic.to_device == 64 && traffic.to_host == 64);
    CHECK(memcmp(in, out, sizeof in) == 0);
    CHECK_EQ_INT(head_of(blob, CBLOB_PART_DIFF), CBLOB_HEAD_AT_GPU); /* the read did not sync the host */
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(device_synced_reads_on_host_and_writes_on_device)
{
    cblob_context *ctx = device_context(&fake_backend);
    CHECK(ctx != NULL);
    cblob_blob *blob;
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_INT32, 4, &blob));
    CHECK(fill_tagged(blob, CBLOB_PART_DATA, 1));
    void *dev;
    CHECK_OK(cb_blob_device(blob, CBLOB_PART_DATA, false, &dev)); /* AT_CPU -> SYNCED */
    CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_SYNCED);
    reset_traffic();
    int32_t out[4];
    CHECK_OK(cblob_blob_copy_out(blob, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, out, 4));
    CHECK(traffic.to_host == 0 && out[3] == tagged(3, 1));
    CHECK_OK(cblob_blob_fill(blob, CBLOB_PART_DATA, 6));
    CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_GPU);
    CHECK_EQ_INT(device_value(blob, CBLOB_PART_DATA, 0), 6);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(device_gpu_mode_writes_new_memory_on_the_device)
{
    cblob_context *ctx = device_context(&fake_backend);
    CHECK(ctx != NULL);
    CHECK_OK(cblob_context_set_mode(ctx, CBLOB_MODE_GPU));
    cblob_blob *blob;
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_UINT32, 5, &blob));
    CHECK_OK(cblob_blob_fill(blob, CBLOB_PART_DATA, 3));
    CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_GPU);
    CHECK_EQ_INT(device_value(blob, CBLOB_PART_DATA, 4), 3);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2G_37_staged_map_reads_from_its_position)
{
    /* NeoML's CUDA GetBuffer fills the staging block from element 0 whatever the position;
     * cblob copies the range the caller named. */
    cblob_context *ctx = device_context(&fake_backend);
    CHECK(ctx != NULL);
    cblob_blob *blob;
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_FLOAT32, 10, &blob));
    CHECK(fill_tagged(blob, CBLOB_PART_DATA, 1));
    CHECK(to_device(blob, CBLOB_PART_DATA));
    reset_traffic();
    cblob_buffer *buffer;
    void *ptr;
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 5, 3, CBLOB_ACCESS_READ, &buffer, &ptr));
    CHECK_EQ_INT(traffic.to_host, 3 * sizeof(float));
    for (int i = 0; i < 3; ++i)
        CHECK_EQ_INT(((const float *)ptr)[i], tagged(5 + i, 1));
    CHECK_OK(cblob_buffer_unmap(buffer));
    CHECK_EQ_INT(traffic.to_device, 0); /* read-only: nothing written back */
    CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_GPU);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2G_37_staged_write_goes_back_to_its_position_at_unmap)
{
    cblob_context *ctx = device_context(&fake_backend);
    CHECK(ctx != NULL);
    cblob_blob *blob;
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_INT32, 6, &blob));
    CHECK(fill_tagged(blob, CBLOB_PART_DATA, 1));
    CHECK(to_device(blob, CBLOB_PART_DATA));
    reset_traffic();
    cblob_buffer *write, *read_write;
    void *w, *rw;
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 2, 2, CBLOB_ACCESS_WRITE, &write, &w));
    CHECK_EQ_INT(traffic.to_host, 0); /* write-only: nothing read */
    ((int32_t *)w)[0] = -1;
    ((int32_t *)w)[1] = -2;
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 4, 2, CBLOB_ACCESS_READ_WRITE, &read_write, &rw));
    ((int32_t *)rw)[1] += 1000;
    /* Out of order: refused, and nothing reaches the device yet. */
    CHECK_ERROR(cblob_buffer_unmap(write), CBLOB_ERR_STATE);
    CHECK_EQ_INT(device_value(blob, CBLOB_PART_DATA, 2), tagged(2, 1));
    CHECK_OK(cblob_buffer_unmap(read_write));
    CHECK_OK(cblob_buffer_unmap(write));
    CHECK_EQ_INT(traffic.to_device, 4 * sizeof(int32_t));
    const double want[6] = {tagged(0, 1), tagged(1, 1), -1, -2, tagged(4, 1), tagged(5, 1) + 1000};
    for (int i = 0; i < 6; ++i)
        CHECK_EQ_INT(device_value(blob, CBLOB_PART_DATA, i), want[i]);
    CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_GPU);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(device_window_ops_reach_the_parent_rows)
{
    cblob_context *ctx = device_context(&fake_backend);
    CHECK(ctx != NULL);
    cblob_blob *parent, *window;
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_FLOAT32, 4, 1, 3, &parent));
    CHECK(fill_tagged(parent, CBLOB_PART_DATA, 1));
    CHECK(to_device(parent, CBLOB_PART_DATA));
    CHECK_OK(cblob_window_create(parent, 2, &window));
    CHECK_OK(cblob_window_set_position(window, 1));
    reset_traffic();
    CHECK_OK(cblob_blob_fill(window, CBLOB_PART_DATA, 8));
    cblob_buffer *buffer;
    void *ptr;
    CHECK_OK(cblob_blob_map(window, CBLOB_PART_DATA, 1, 2, CBLOB_ACCESS_READ, &buffer, &ptr));
    CHECK(((const float *)ptr)[0] == 8 && ((const float *)ptr)[1] == 8);
    CHECK_OK(cblob_buffer_unmap(buffer));
    for (int i = 0; i < 12; ++i)
        CHECK_EQ_INT(device_value(parent, CBLOB_PART_DATA, i), i >= 3 && i < 9 ? 8 : tagged(i, 1));
    CHECK_EQ_INT(traffic.to_host, 2 * sizeof(float));
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
    cblob_context_destroy(ctx);
}

TEST(device_backend_without_a_kernel_says_so)
{
    cb_device_kernels partial = cb_host_device_kernels;
    partial.fill = NULL;
    cb_device_backend limited = fake_backend;
    limited.kernels = &partial;
    cblob_context *ctx = device_context(&limited);
    CHECK(ctx != NULL);
    cblob_blob *blob;
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_FLOAT32, 3, &blob));
    CHECK(fill_tagged(blob, CBLOB_PART_DATA, 1));
    CHECK(to_device(blob, CBLOB_PART_DATA));
    CHECK_ERROR(cblob_blob_fill(blob, CBLOB_PART_DATA, 1), CBLOB_ERR_NOT_IMPLEMENTED);
    CHECK(strstr(cblob_last_error_message(), "fill") != NULL);
    CHECK(strstr(cblob_last_error_message(), "the test device") != NULL);
    CHECK_EQ_INT(device_value(blob, CBLOB_PART_DATA, 2), tagged(2, 1));
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}
