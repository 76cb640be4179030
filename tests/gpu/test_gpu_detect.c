/* SPDX-License-Identifier: BSD-2-Clause */
/* Each outcome of finding the GPU stack has its own status and message, and a machine without a
 * usable GPU still does everything else. The suite's environment points cblob at the test
 * doubles (tests/fake_cuda); each test changes that environment before its first GPU call (a
 * test is a process, and the stack is looked for once per process). */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "gpu_support.h"

/* The GPU calls all fail with `expected` and a message containing `words`; host work goes on. */
static void check_unusable(cblob_status expected, const char *words)
{
    int32_t devices = -7;
    CHECK_ERROR(cblob_gpu_probe(&devices), expected);
    CHECK_MSG(strstr(cblob_last_error_message(), words) != NULL, "message \"%s\" lacks \"%s\"",
              cblob_last_error_message(), words);
    CHECK_EQ_INT(devices, -7);

    cblob_context *ctx = NULL;
    cblob_blob *blob = NULL;
    const int64_t shape[1] = {8};
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, shape, &blob));
    CHECK_ERROR(cblob_context_set_mode(ctx, CBLOB_MODE_GPU), expected);
    cblob_mode mode = -1;
    CHECK_OK(cblob_context_mode(ctx, &mode));
    CHECK_EQ_INT(mode, CBLOB_MODE_CPU);
    const void *dev = NULL;
    CHECK_ERROR(cblob_blob_gpu_ptr(blob, CBLOB_PART_DATA, &dev), expected);
    CHECK_ERROR(cblob_blob_async_push(blob, CBLOB_PART_DATA), expected);
    CHECK_ERROR(cblob_context_set_device(ctx, 0), expected);
    CHECK_ERROR(cblob_context_set_stream(ctx, NULL), expected);
    size_t length = 0;
    CHECK_ERROR(cblob_gpu_device_name(0, NULL, 0, &length), expected);
    CHECK_OK(cblob_context_synchronize(ctx)); /* nothing was queued */

    float *data = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, (void **)&data));
    for (int i = 0; i < 8; ++i)
        data[i] = (float)-i;
    double sum = 0;
    CHECK_OK(cblob_blob_asum(blob, CBLOB_PART_DATA, &sum));
    CHECK_NEAR(sum, 28.0, 1e-9);

    /* The report says the same, and never fails for want of a GPU. */
    char report[4096];
    CHECK_OK(cblob_gpu_report(report, sizeof report, &length));
    CHECK(strstr(report, cblob_status_name(expected)) != NULL);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(no_driver)
{
    setenv("CBLOB_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    check_unusable(CBLOB_ERR_NO_DRIVER, "/nonexistent/libcuda.so.1");
    int32_t driver = -1, nvrtc = -1, cublas = -1;
    CHECK_OK(cblob_gpu_versions(&driver, &nvrtc, &cublas));
    CHECK_EQ_INT(driver, 0);
}

TEST(toolkit_stub_driver)
{
    const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (access(stub, R_OK) != 0)
        SKIP("the CUDA toolkit's stub driver (/usr/local/cuda/lib64/stubs/libcuda.so) is not installed; "
             "stub_driver_from_the_double covers the same outcome");
    setenv("CBLOB_CUDA_DRIVER", stub, 1);
    check_unusable(CBLOB_ERR_STUB_DRIVER, "stub");
}

TEST(stub_driver_from_the_double)
{
    setenv("CBLOB_FAKE_CUDA_STUB", "1", 1);
    check_unusable(CBLOB_ERR_STUB_DRIVER, "CUDA_ERROR_STUB_LIBRARY");
}

TEST(no_device)
{
    setenv("CBLOB_FAKE_CUDA_DEVICES", "0", 1);
    check_unusable(CBLOB_ERR_NO_DEVICE, "no CUDA device");
}

TEST(driver_older_than_nvrtc_needs)
{
    setenv("CBLOB_FAKE_CUDA_VERSION", "12040", 1);
    check_unusable(CBLOB_ERR_DRIVER_TOO_OLD, "supports CUDA 12.4");
    CHECK(strstr(cblob_last_error_message(), "NVRTC 13.") != NULL);
}

TEST(nvrtc_missing)
{
    setenv("CBLOB_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.13", 1);
    check_unusable(CBLOB_ERR_NVRTC_MISSING, "/nonexistent/libnvrtc.so.13");
}

TEST(cublas_missing)
{
    setenv("CBLOB_CUBLAS_LIBRARY", "/nonexistent/libcublas.so.13", 1);
    check_unusable(CBLOB_ERR_CUBLAS_MISSING, "/nonexistent/libcublas.so.13");
}

TEST(device_older_than_nvrtc_supports)
{
    setenv("CBLOB_FAKE_CUDA_ARCH", "60", 1);
    int32_t devices = 0;
    CHECK_OK(cblob_gpu_probe(&devices)); /* the stack is there ... */
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_ERROR(cblob_context_set_mode(ctx, CBLOB_MODE_GPU), CBLOB_ERR_NO_DEVICE); /* ... the device is too old */
    CHECK(strstr(cblob_last_error_message(), "compute capability 6.0") != NULL);
    cblob_context_destroy(ctx);
}

TEST(working_gpu)
{
    int32_t devices = 0;
    CHECK_OK(cblob_gpu_probe(&devices));
    CHECK_EQ_INT(devices, 1);
    CHECK(gpu_is_fake());
    CHECK(gpu_counters().proc_address_lookups > 0); /* symbols came through cuGetProcAddress_v2 */
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_context_set_mode(ctx, CBLOB_MODE_GPU));
    char name[64];
    size_t length = 0;
    CHECK_OK(cblob_gpu_device_name(0, name, sizeof name, &length));
    CHECK(strcmp(name, "cblob fake CUDA device 0") == 0);
    int32_t driver = 0, nvrtc = 0, cublas = 0;
    CHECK_OK(cblob_gpu_versions(&driver, &nvrtc, &cublas));
    CHECK_EQ_INT(driver, 13000);
    CHECK(nvrtc >= 13000);
    CHECK_EQ_INT(cublas, 13000);
    char report[4096];
    CHECK_OK(cblob_gpu_report(report, sizeof report, &length));
    CHECK(strstr(report, "gpu: usable, 1 device") != NULL);
    CHECK(strstr(report, "gpu device 0: cblob fake CUDA device 0, compute capability 8.0") != NULL);
    CHECK(strstr(report, "kernel cache: memory") != NULL);
    cblob_context_destroy(ctx);
}

TEST(driver_symbols_fall_back_to_dlsym)
{
    setenv("CBLOB_FAKE_CUDA_NO_PROC_ADDRESS", "1", 1);
    int32_t devices = 0;
    CHECK_OK(cblob_gpu_probe(&devices));
    cblob_context *ctx = NULL;
    cblob_blob *blob = NULL;
    const int64_t shape[1] = {4};
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, shape, &blob));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(blob, CBLOB_PART_DATA, &dev));
    CHECK_OK(cblob_blob_scale(blob, CBLOB_PART_DATA, 2.0));
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

static void *probe_from_a_thread(void *status)
{
    int32_t devices = 0;
    *(cblob_status *)status = cblob_gpu_probe(&devices);
    return NULL;
}

TEST(the_stack_is_loaded_once_under_concurrent_first_use)
{
    setenv("CBLOB_FAKE_CUDA_VERSION", "12080", 1); /* a failure too must be the same everywhere */
    pthread_t threads[16];
    cblob_status statuses[16];
    for (int i = 0; i < 16; ++i)
        CHECK(pthread_create(&threads[i], NULL, probe_from_a_thread, &statuses[i]) == 0);
    for (int i = 0; i < 16; ++i)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < 16; ++i)
        CHECK_EQ_INT(statuses[i], CBLOB_ERR_DRIVER_TOO_OLD);
}
