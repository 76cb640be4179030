/* SPDX-License-Identifier: BSD-2-Clause */
/* The NVRTC JIT and the kernel cache, through the backend's internals: the generated kernels
 * agree with the CPU kernels, and the cache hits, misses, rejects damaged entries, falls back to
 * memory when its folder cannot be written, honours its modes and compiles once under a
 * 16-thread first use. Built against the test double (gpu_jit) and against the machine's GPU
 * (gpu_jit_device); each test sets up its own cache folder and mode before its first GPU call. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "context.h"
#include "core/run_kernels.h"
#include "cpu/kernels.h"
#include "cuda/families.h"
#include "cuda_cache.h"
#include "cuda_jit.h"
#include "fault.h"
#include "gpu_support.h"
#include "sha256.h"

/* ---- a private cache folder per test --------------------------------------------------------- */

static char cache_dir[128];

static void remove_cache_dir(void)
{
    DIR *dir = opendir(cache_dir);
    if (dir == NULL)
        return;
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
        char path[512];
        if (entry->d_name[0] == '.' && (entry->d_name[1] == '\0' || (entry->d_name[1] == '.' && entry->d_name[2] == '\0')))
            continue;
        snprintf(path, sizeof path, "%s/%s", cache_dir, entry->d_name);
        unlink(path);
    }
    closedir(dir);
    rmdir(cache_dir);
}

/* Sets the cache up before anything reads its configuration. */
static bool use_cache(const char *mode)
{
    snprintf(cache_dir, sizeof cache_dir, "/tmp/cblob-kernels-XXXXXX");
    if (mkdtemp(cache_dir) == NULL)
        return false;
    atexit(remove_cache_dir);
    setenv("CBLOB_KERNEL_CACHE_DIR", cache_dir, 1);
    setenv("CBLOB_KERNEL_CACHE", mode, 1);
    return true;
}

/* The entries whose name starts with prefix (a family name, "" for all); the first one's path. */
static int entries(const char *prefix, char *first, size_t size)
{
    int count = 0;
    DIR *dir = opendir(cache_dir);
    if (dir == NULL)
        return -1;
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
        if (entry->d_name[0] == '.' || strncmp(entry->d_name, prefix, strlen(prefix)) != 0)
            continue;
        if (count++ == 0 && first != NULL)
            snprintf(first, size, "%s/%s", cache_dir, entry->d_name);
    }
    closedir(dir);
    return count;
}

static cb_cuda_cache_stats stats(void)
{
    cb_cuda_cache_stats now;
    cb_cuda_cache_stats_get(&now);
    return now;
}

/* A context with its device open, and that device as the backend sees it. */
static const cb_device *open_device(cblob_context **ctx)
{
    const cb_device *device = NULL;
    if (cblob_context_create(ctx) != CBLOB_OK || cb_context_device(*ctx, &device) != CBLOB_OK)
        return NULL;
    return device;
}

static cblob_status load(const cb_device *device, cb_cuda_family_id family)
{
    cb_cuda_kernel kernel;
    cblob_status status = cb_cuda_kernel_get(device, family, CBLOB_DTYPE_FLOAT32, &kernel);
    if (status == CBLOB_OK)
        cb_cuda_kernel_release(device, &kernel);
    return status;
}

/* ---- the generated kernels against the CPU kernels --------------------------------------------- */

static double value_at(int64_t i)
{
    return ((double)((i * 7919) % 2003) - 1001.0) / 97.0;
}

/* Device memory of n elements holding value_at(i + shift), through a blob. */
static void *device_array(cblob_context *ctx, cblob_dtype dtype, int64_t n, int shift, cblob_blob **holder)
{
    const int64_t count = n > 0 ? n : 1;
    void *host = NULL, *dev = NULL;
    if (cblob_blob_create(ctx, dtype, 1, &count, holder) != CBLOB_OK ||
        cblob_blob_mutable_cpu_ptr(*holder, CBLOB_PART_DATA, &host) != CBLOB_OK)
        return NULL;
    for (int64_t i = 0; i < count; ++i) {
        if (dtype == CBLOB_DTYPE_FLOAT32)
            ((float *)host)[i] = (float)value_at(i + shift);
        else
            ((double *)host)[i] = value_at(i + shift);
    }
    return cblob_blob_mutable_gpu_ptr(*holder, CBLOB_PART_DATA, &dev) == CBLOB_OK ? dev : NULL;
}

static double host_element(cblob_blob *blob, int64_t i)
{
    double value = NAN;
    cblob_blob_read_element(blob, CBLOB_PART_DATA, 1, &i, &value);
    return value;
}

static void jit_agrees(cblob_dtype dtype)
{
    REQUIRE_GPU();
    CHECK(use_cache("memory"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    const cb_kernels *cpu = &cb_cpu_kernel_table[dtype];
    const size_t element = dtype == CBLOB_DTYPE_FLOAT32 ? sizeof(float) : sizeof(double);
    const double tolerance = dtype == CBLOB_DTYPE_FLOAT32 ? 1e-5 : 1e-12;
    static const int64_t sizes[] = {0, 1, 31, 255, 256, 257, 4099, 300001};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        const int64_t n = sizes[s];
        cblob_blob *x_blob = NULL, *y_blob = NULL;
        void *x = device_array(ctx, dtype, n, 0, &x_blob), *y = device_array(ctx, dtype, n, 11, &y_blob);
        CHECK(x != NULL && y != NULL);
        /* The same on the host, through the CPU kernels. */
        unsigned char *hx = malloc((size_t)(n + 1) * element), *hy = malloc((size_t)(n + 1) * element);
        CHECK(hx != NULL && hy != NULL);
        for (int64_t i = 0; i < n; ++i) {
            if (dtype == CBLOB_DTYPE_FLOAT32) {
                ((float *)hx)[i] = (float)value_at(i);
                ((float *)hy)[i] = (float)value_at(i + 11);
            } else {
                ((double *)hx)[i] = value_at(i);
                ((double *)hy)[i] = value_at(i + 11);
            }
        }
        double want = 0, got = -1;
        CHECK_OK(cpu->asum(&cb_host_device, n, hx, &want));
        CHECK_OK(cb_cuda_jit_kernels[dtype].asum(device, n, x, &got));
        CHECK_NEAR(got, want, tolerance * (1 + want));
        CHECK_OK(cpu->sumsq(&cb_host_device, n, hx, &want));
        CHECK_OK(cb_cuda_jit_kernels[dtype].sumsq(device, n, x, &got));
        CHECK_NEAR(got, want, tolerance * (1 + want));
        CHECK_OK(cpu->axpy(&cb_host_device, n, -1.5, hx, hy));
        CHECK_OK(cb_cuda_jit_kernels[dtype].axpy(device, n, -1.5, x, y));
        CHECK_OK(cpu->scale(&cb_host_device, n, 0.25, hy));
        CHECK_OK(cb_cuda_jit_kernels[dtype].scale(device, n, 0.25, y));
        for (int64_t i = 0; i < n; i += 1 + n / 64) {
            const double expected = dtype == CBLOB_DTYPE_FLOAT32 ? ((float *)hy)[i] : ((double *)hy)[i];
            /* --fmad=false: the same roundings as the CPU kernel, so the same bits. */
            CHECK_MSG(host_element(y_blob, i) == expected, "n=%lld i=%lld: %.17g on the device, %.17g on the host",
                      (long long)n, (long long)i, host_element(y_blob, i), expected);
        }
        free(hx);
        free(hy);
        cblob_blob_destroy(x_blob);
        cblob_blob_destroy(y_blob);
    }
    cblob_context_destroy(ctx);
}

TEST(jit_kernels_agree_with_the_cpu_kernels_float32) { jit_agrees(CBLOB_DTYPE_FLOAT32); }
TEST(jit_kernels_agree_with_the_cpu_kernels_float64) { jit_agrees(CBLOB_DTYPE_FLOAT64); }

/* A reduction's sum lives in a result slot of the context's queue and its partial sums in the
 * queue's scratch, made at the first reduction and freed with the queue: no allocation and no
 * free per call (cuMemFree made the whole device wait, and leaked when the context could not be
 * entered). The first pass's grid is what the driver says the kernel fills the device with
 * (occupancy), not a fixed 16 blocks per multiprocessor; the second pass is one block. */
TEST(jit_reductions_allocate_nothing_and_size_the_grid_by_occupancy)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("only the double counts allocations and grids");
    const uint64_t in_use = gpu_counters().device_bytes_in_use;
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    cblob_blob *holder = NULL;
    const int64_t n = 1 << 20;
    void *x = device_array(ctx, CBLOB_DTYPE_FLOAT32, n, 0, &holder);
    CHECK(x != NULL);
    double sum = 0;
    CHECK_OK(cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].asum(device, n, x, &sum)); /* loads the family */
    const fake_cuda_counters before = gpu_counters();
    for (int call = 0; call < 3; ++call) {
        CHECK_OK(cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].asum(device, n, x, &sum));
        CHECK_OK(cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].sumsq(device, n, x, &sum));
    }
    CHECK_COUNTER_DELTA(before, device_allocs, 0);
    CHECK_COUNTER_DELTA(before, device_syncs, 0);
    CHECK_COUNTER_DELTA(before, launches, 12);
    /* The double reports 4 multiprocessors and room for 2048 threads each: 8 blocks of 256. */
    CHECK_EQ_INT(gpu_counters().previous_grid, 4 * (2048 / 256));
    CHECK_EQ_INT(gpu_counters().last_grid, 1);
    cblob_blob_destroy(holder);
    cblob_context_destroy(ctx);
    CHECK_EQ_INT(gpu_counters().device_bytes_in_use, in_use);
}

/* A reduction that cannot make the device's context current fails and leaves nothing behind:
 * nothing is allocated per call, and the queue's scratch goes with the context. */
TEST(jit_reduction_that_cannot_enter_the_context_leaks_nothing)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("only the double can refuse to make a context current");
    const fake_cuda_counters at_start = gpu_counters();
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    cblob_blob *holder = NULL;
    void *x = device_array(ctx, CBLOB_DTYPE_FLOAT64, 5000, 0, &holder);
    CHECK(x != NULL);
    double sum = 0, first = 0;
    CHECK_OK(cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT64].asum(device, 5000, x, &first));
    const fake_cuda_counters before = gpu_counters();
    const int pushed = gpu_fill_context_stack();
    CHECK(pushed > 0);
    const cblob_status refused = cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT64].asum(device, 5000, x, &sum);
    gpu_empty_context_stack(pushed);
    CHECK_MSG(refused == CBLOB_ERR_DEVICE, "asum with the context stack full returned %s", cblob_status_name(refused));
    CHECK_COUNTER_DELTA(before, device_allocs, 0);
    CHECK_COUNTER_DELTA(before, pinned_allocs, 0);
    CHECK_COUNTER_DELTA(before, launches, 0);
    CHECK_OK(cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT64].asum(device, 5000, x, &sum));
    CHECK(memcmp(&sum, &first, sizeof sum) == 0);
    cblob_blob_destroy(holder);
    cblob_context_destroy(ctx);
    CHECK_EQ_INT(gpu_counters().device_bytes_in_use, at_start.device_bytes_in_use);
    CHECK_EQ_INT(gpu_counters().pinned_bytes_in_use, at_start.pinned_bytes_in_use);
}

/* A reduction's sum is the same, bit for bit, whatever grid the occupancy the driver reports gives
 * it and from one run to the next (the double runs blocks and threads in another order each
 * time), and agrees with the CPU kernel's within the dtype's tolerance. */
static void reductions_are_deterministic(cblob_dtype dtype)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("only the double can report another occupancy");
    CHECK(use_cache("disk")); /* reloads with another occupancy come from the disk */
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    const cb_kernels *cpu = &cb_cpu_kernel_table[dtype];
    const double tolerance = dtype == CBLOB_DTYPE_FLOAT32 ? 1e-5 : 1e-12;
    static const int64_t sizes[] = {1, 1000, 300001};
    static const int occupancies[] = {1, 3, 8, 2};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        const int64_t n = sizes[s];
        cblob_blob *holder = NULL;
        void *x = device_array(ctx, dtype, n, 5, &holder);
        CHECK(x != NULL);
        void *host = NULL;
        CHECK_OK(cblob_blob_mutable_cpu_ptr(holder, CBLOB_PART_DATA, &host));
        double cpu_asum = 0, cpu_sumsq = 0;
        CHECK_OK(cpu->asum(&cb_host_device, n, host, &cpu_asum));
        CHECK_OK(cpu->sumsq(&cb_host_device, n, host, &cpu_sumsq));
        CHECK(cblob_blob_mutable_gpu_ptr(holder, CBLOB_PART_DATA, &x) == CBLOB_OK);
        double first_asum = 0, first_sumsq = 0;
        for (size_t o = 0; o < sizeof occupancies / sizeof occupancies[0]; ++o) {
            CHECK(gpu_set_occupancy(occupancies[o]));
            cb_cuda_cache_forget_memory();
            for (int run = 0; run < 2; ++run) {
                double asum = -1, sumsq = -1;
                CHECK_OK(cb_cuda_jit_kernels[dtype].asum(device, n, x, &asum));
                CHECK_OK(cb_cuda_jit_kernels[dtype].sumsq(device, n, x, &sumsq));
                if (o == 0 && run == 0) {
                    first_asum = asum;
                    first_sumsq = sumsq;
                    CHECK_NEAR(asum, cpu_asum, tolerance * (1 + cpu_asum));
                    CHECK_NEAR(sumsq, cpu_sumsq, tolerance * (1 + cpu_sumsq));
                }
                CHECK_MSG(memcmp(&asum, &first_asum, sizeof asum) == 0 && memcmp(&sumsq, &first_sumsq, sizeof sumsq) == 0,
                          "n=%lld, %d blocks per multiprocessor, run %d: asum %.17g and sumsq %.17g, first %.17g and %.17g",
                          (long long)n, occupancies[o], run, asum, sumsq, first_asum, first_sumsq);
            }
        }
        CHECK(gpu_set_occupancy(0));
        cblob_blob_destroy(holder);
    }
    cblob_context_destroy(ctx);
}

TEST(jit_reductions_are_bit_identical_across_grids_and_runs_float32) { reductions_are_deterministic(CBLOB_DTYPE_FLOAT32); }
TEST(jit_reductions_are_bit_identical_across_grids_and_runs_float64) { reductions_are_deterministic(CBLOB_DTYPE_FLOAT64); }

TEST(jit_kernel_for_a_dtype_the_family_lacks_is_not_implemented)
{
    REQUIRE_GPU();
    CHECK(use_cache("memory"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    /* The tables leave those entries empty, and the run path answers them. */
    CHECK(cb_cuda_jit_kernels[CBLOB_DTYPE_INT32].asum == NULL && cb_cuda_kernels[CBLOB_DTYPE_UINT32].axpy == NULL);
    double sum = -1;
    CHECK_ERROR(cb_run_asum(device, CBLOB_DTYPE_INT32, 4, NULL, &sum), CBLOB_ERR_NOT_IMPLEMENTED);
    CHECK_ERROR(cb_run_axpy(device, CBLOB_DTYPE_UINT32, 4, 1.0, NULL, NULL), CBLOB_ERR_NOT_IMPLEMENTED);
    CHECK(sum == -1);
    cblob_context_destroy(ctx);
}

/* ---- hit, miss, damaged entries ------------------------------------------------------------ */

TEST(cache_miss_compiles_and_writes_then_memory_and_disk_hits_do_not)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    const cb_cuda_cache_stats before = stats();
    CHECK_OK(load(device, CB_CUDA_FAMILY_AXPY));
    cb_cuda_cache_stats now = stats();
    CHECK_EQ_INT(now.compiles - before.compiles, 1);
    CHECK_EQ_INT(now.disk_writes - before.disk_writes, 1);
    char path[512];
    CHECK_EQ_INT(entries("axpy-", path, sizeof path), 1);
    CHECK(strstr(path, "-sm_") != NULL || strstr(path, "-compute_") != NULL);
    CHECK_EQ_INT(entries("", NULL, 0), 1); /* no temporary file left behind */

    CHECK_OK(load(device, CB_CUDA_FAMILY_AXPY)); /* memory hit */
    const cb_cuda_cache_stats after_memory_hit = stats();
    CHECK_EQ_INT(after_memory_hit.compiles, now.compiles);
    CHECK_EQ_INT(after_memory_hit.disk_hits, now.disk_hits);

    cb_cuda_cache_forget_memory();
    CHECK_OK(load(device, CB_CUDA_FAMILY_AXPY)); /* disk hit */
    const cb_cuda_cache_stats after_disk_hit = stats();
    CHECK_EQ_INT(after_disk_hit.compiles, now.compiles);
    CHECK_EQ_INT(after_disk_hit.disk_hits - now.disk_hits, 1);
    CHECK_EQ_INT(after_disk_hit.disk_writes, now.disk_writes);
    cblob_context_destroy(ctx);
}

static int temporaries(void);

/* An entry that reading fails on (an I/O error, no memory) may be good: the load compiles the
 * family instead and keeps the entry (a damaged one is deleted); an interrupted read is made
 * again and the entry is used. */
static void check_unreadable_entry_is_kept(int error)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    CHECK_EQ_INT(entries("scale-", NULL, 0), 1);
    cb_cuda_cache_forget_memory();
    const cb_cuda_cache_stats before = stats();
    cb_fault_arm(CB_FAULT_READ, 1, error, false);
    const cblob_status status = load(device, CB_CUDA_FAMILY_SCALE);
    const bool fired = cb_fault_fired(CB_FAULT_READ);
    cb_fault_arm(CB_FAULT_READ, 0, 0, false);
    CHECK(fired);
    CHECK_OK(status);
    const cb_cuda_cache_stats after = stats();
    CHECK_EQ_INT(after.disk_rejected - before.disk_rejected, 0);
    CHECK_EQ_INT(after.disk_hits - before.disk_hits, error == EINTR ? 1 : 0);
    CHECK_EQ_INT(after.compiles - before.compiles, error == EINTR ? 0 : 1);
    CHECK_EQ_INT(entries("scale-", NULL, 0), 1);
    CHECK_EQ_INT(temporaries(), 0);
    cblob_context_destroy(ctx);
}

TEST(cache_entry_whose_read_fails_is_kept_and_compiled_instead) { check_unreadable_entry_is_kept(EIO); }
TEST(cache_entry_whose_read_a_signal_interrupts_is_read_again) { check_unreadable_entry_is_kept(EINTR); }

/* No allocation failing during a load deletes a good entry: each allocation of the load made to
 * fail in turn, the entry is still there and was never counted as rejected. */
TEST(cache_entry_survives_every_allocation_failure_of_a_load)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    bool done = false;
    int64_t nth = 1;
    for (; !done && nth < 1000; ++nth) {
        cb_cuda_cache_forget_memory();
        const cb_cuda_cache_stats before = stats();
        cb_fault_arm(CB_FAULT_ALLOC, nth, 0, false);
        const cblob_status status = load(device, CB_CUDA_FAMILY_SCALE);
        done = !cb_fault_fired(CB_FAULT_ALLOC);
        cb_fault_arm(CB_FAULT_ALLOC, 0, 0, false);
        CHECK_MSG(status == CBLOB_OK || status == CBLOB_ERR_OUT_OF_MEMORY, "allocation #%lld failing: %s",
                  (long long)nth, cblob_status_name(status));
        CHECK_MSG(stats().disk_rejected == before.disk_rejected, "allocation #%lld failing: the entry was rejected",
                  (long long)nth);
        CHECK_MSG(entries("scale-", NULL, 0) == 1, "allocation #%lld failing: the entry is gone", (long long)nth);
    }
    CHECK(done && nth > 2);
    cblob_context_destroy(ctx);
}

/* Damages the family's entry with `damage`, then checks the next load deletes it, compiles and
 * writes a good one that the load after reads. */
static void check_damaged_entry_is_replaced(void (*damage)(const char *path))
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    char path[512];
    CHECK_EQ_INT(entries("scale-", path, sizeof path), 1);
    damage(path);
    cb_cuda_cache_forget_memory();
    const cb_cuda_cache_stats before = stats();
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    const cb_cuda_cache_stats after = stats();
    CHECK_EQ_INT(after.disk_rejected - before.disk_rejected, 1);
    CHECK_EQ_INT(after.compiles - before.compiles, 1);
    CHECK_EQ_INT(after.disk_writes - before.disk_writes, 1);
    CHECK_EQ_INT(entries("scale-", NULL, 0), 1);
    cb_cuda_cache_forget_memory();
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    CHECK_EQ_INT(stats().disk_hits - after.disk_hits, 1);
    cblob_context_destroy(ctx);
}

static void flip_a_byte(const char *path)
{
    FILE *file = fopen(path, "r+b");
    if (file == NULL)
        return;
    fseek(file, 200, SEEK_SET);
    const int byte = fgetc(file);
    fseek(file, 200, SEEK_SET);
    fputc(byte ^ 0x40, file);
    fclose(file);
}

static void truncate_it(const char *path)
{
    if (truncate(path, 60) != 0)
        unlink(path);
}

/* A well-formed entry (right key, right checksum, the shape of its kind: an ELF64 header with
 * nothing behind it, or NUL-terminated text) whose image the driver cannot load. */
static void replace_image_with_garbage(const char *path)
{
    unsigned char header[88];
    FILE *file = fopen(path, "rb");
    if (file == NULL || fread(header, 1, sizeof header, file) != sizeof header) {
        if (file != NULL)
            fclose(file);
        return;
    }
    fclose(file);
    const bool ptx = header[12] == 2;
    static const char text[] = "this is not PTX, though its checksum is right";
    unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    const void *garbage = ptx ? (const void *)text : (const void *)elf;
    const size_t size = ptx ? sizeof text : sizeof elf;
    for (int i = 0; i < 8; ++i)
        header[16 + i] = (unsigned char)((uint64_t)size >> (8 * i));
    cb_sha256_digest(garbage, size, header + 56);
    file = fopen(path, "wb");
    if (file == NULL)
        return;
    fwrite(header, 1, sizeof header, file);
    fwrite(garbage, 1, size, file);
    fclose(file);
}

TEST(cache_corrupt_entry_is_deleted_and_recompiled) { check_damaged_entry_is_replaced(flip_a_byte); }
TEST(cache_truncated_entry_is_deleted_and_recompiled) { check_damaged_entry_is_replaced(truncate_it); }
/* An entry that passes every check is what NVRTC produced: when the driver refuses it, compiling
 * again would give the same bytes, so the load fails with a clear error, and the entry stays (no
 * delete-and-recompile, in this process or the next). */
TEST(cache_entry_the_driver_refuses_is_reported_not_recompiled)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    char path[512];
    CHECK_EQ_INT(entries("scale-", path, sizeof path), 1);
    replace_image_with_garbage(path);
    cb_cuda_cache_forget_memory();
    const cb_cuda_cache_stats before = stats();
    CHECK_ERROR(load(device, CB_CUDA_FAMILY_SCALE), CBLOB_ERR_DEVICE);
    CHECK(strstr(cblob_last_error_message(), path) != NULL);
    CHECK(strstr(cblob_last_error_message(), "NVRTC") != NULL);
    const cb_cuda_cache_stats after = stats();
    CHECK_EQ_INT(after.compiles - before.compiles, 0);
    CHECK_EQ_INT(after.disk_rejected - before.disk_rejected, 0);
    CHECK_EQ_INT(entries("scale-", NULL, 0), 1);
    cblob_context_destroy(ctx);
}

/* ---- the target NVRTC compiles for ---------------------------------------------------------------- */

static const cb_cuda_nvrtc *nvrtc_knowing(int major, int minor)
{
    static cb_cuda_nvrtc compiler;
    static const int archs[] = {75, 80, 86, 89, 90, 100, 120};
    compiler = (cb_cuda_nvrtc){.status = CBLOB_OK, .major = major, .minor = minor, .arch_count = 7};
    memcpy(compiler.archs, archs, sizeof archs);
    return &compiler;
}

TEST(target_is_a_cubin_of_the_same_major_architecture_when_the_exact_one_is_missing)
{
    cb_cuda_target target;
    CHECK_OK(cb_cuda_target_for(nvrtc_knowing(13, 0), 13000, 87, &target));
    CHECK(!target.ptx);
    CHECK(strcmp(target.name, "sm_86") == 0);
    CHECK_OK(cb_cuda_target_for(nvrtc_knowing(13, 0), 13000, 121, &target));
    CHECK(!target.ptx && strcmp(target.name, "sm_120") == 0);
    CHECK_OK(cb_cuda_target_for(nvrtc_knowing(13, 0), 13000, 90, &target));
    CHECK(!target.ptx && strcmp(target.name, "sm_90") == 0);
}

TEST(target_is_ptx_only_for_a_driver_at_least_as_new_as_nvrtc)
{
    cb_cuda_target target;
    CHECK_OK(cb_cuda_target_for(nvrtc_knowing(13, 1), 13010, 130, &target));
    CHECK(target.ptx && strcmp(target.name, "compute_120") == 0);
    CHECK_ERROR(cb_cuda_target_for(nvrtc_knowing(13, 1), 13000, 130, &target), CBLOB_ERR_DRIVER_TOO_OLD);
    CHECK(strstr(cblob_last_error_message(), "13.0") != NULL);
    CHECK(strstr(cblob_last_error_message(), "13.1") != NULL);
    /* Compiling ahead for an architecture (no driver involved) takes PTX as it is. */
    CHECK_OK(cb_cuda_target_for(nvrtc_knowing(13, 1), 0, 130, &target));
    CHECK(target.ptx);
}

TEST(cache_entry_under_another_key_is_rejected)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    CHECK_OK(load(device, CB_CUDA_FAMILY_ASUM));
    CHECK_OK(load(device, CB_CUDA_FAMILY_SUMSQ));
    char asum[512], sumsq[512];
    CHECK_EQ_INT(entries("asum-", asum, sizeof asum), 1);
    CHECK_EQ_INT(entries("sumsq-", sumsq, sizeof sumsq), 1);
    CHECK(rename(asum, sumsq) == 0); /* a valid entry of another family, under this one's name */
    cb_cuda_cache_forget_memory();
    const cb_cuda_cache_stats before = stats();
    CHECK_OK(load(device, CB_CUDA_FAMILY_SUMSQ));
    CHECK_EQ_INT(stats().disk_rejected - before.disk_rejected, 1);
    CHECK_EQ_INT(stats().compiles - before.compiles, 1);
    cblob_context_destroy(ctx);
}

/* ---- folders that cannot be written --------------------------------------------------------------- */

static void check_unwritable_folder(const char *folder)
{
    REQUIRE_GPU();
    setenv("CBLOB_KERNEL_CACHE_DIR", folder, 1);
    setenv("CBLOB_KERNEL_CACHE", "disk", 1);
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    const cb_cuda_cache_stats before = stats();
    CHECK_OK(load(device, CB_CUDA_FAMILY_ASUM));
    CHECK_OK(load(device, CB_CUDA_FAMILY_AXPY));
    CHECK_OK(load(device, CB_CUDA_FAMILY_ASUM)); /* kept in memory */
    const cb_cuda_cache_stats after = stats();
    CHECK_EQ_INT(after.compiles - before.compiles, 2);
    CHECK_EQ_INT(after.disk_writes - before.disk_writes, 0);
    cblob_cache_mode mode = -1;
    CHECK_OK(cblob_kernel_cache_mode(&mode));
    CHECK_EQ_INT(mode, CBLOB_KERNEL_CACHE_MEMORY);
    char log[2048];
    size_t length = 0;
    CHECK_OK(cblob_context_log(ctx, log, sizeof log, &length));
    const char *first = strstr(log, "cannot be written");
    CHECK_MSG(first != NULL && strstr(log, folder) != NULL, "log: \"%s\"", log);
    CHECK_MSG(strstr(first + 1, "cannot be written") == NULL, "more than one warning: \"%s\"", log);
    CHECK(strchr(log, '\n') == log + length - 1); /* one line */
    char report[4096];
    CHECK_OK(cblob_gpu_report(report, sizeof report, &length));
    CHECK(strstr(report, "kernel cache: memory (the kernel cache folder") != NULL);
    cblob_context_destroy(ctx);
}

TEST(cache_read_only_folder_falls_back_to_memory_with_one_warning) { check_unwritable_folder("/proc"); }
TEST(cache_folder_that_cannot_be_made_falls_back_to_memory) { check_unwritable_folder("/dev/null/cblob-kernels"); }

TEST(cache_read_only_folder_for_an_unprivileged_user)
{
    if (geteuid() == 0)
        SKIP("running as root, which writes into a mode-0555 folder anyway; "
             "cache_read_only_folder_falls_back_to_memory_with_one_warning covers the outcome with /proc");
    char folder[128] = "/tmp/cblob-readonly-XXXXXX";
    CHECK(mkdtemp(folder) != NULL);
    CHECK(chmod(folder, 0555) == 0);
    check_unwritable_folder(folder);
    rmdir(folder);
}

/* ---- who may write the cache --------------------------------------------------------------------- */

/* Anyone who can write the folder or an entry could hand the library machine code to load: the
 * folder and its entries are used only when the effective user owns them and neither group nor
 * others can write them; entries are opened without following symbolic links. Each refusal is
 * said in the context's log. Changing owners needs root (chown in the test's private folder). */

#define STRANGER 12345

static bool log_says(cblob_context *ctx, const char *what)
{
    char log[4096];
    size_t length = 0;
    if (cblob_context_log(ctx, log, sizeof log, &length) != CBLOB_OK)
        return false;
    if (strstr(log, what) == NULL)
        fprintf(stderr, "the log does not say \"%s\": \"%s\"\n", what, log);
    return strstr(log, what) != NULL;
}

/* The folder is refused: nothing read from it, nothing written, and the log says why. */
static void check_folder_refused(void (*spoil)(void), const char *why)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    spoil();
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    const cb_cuda_cache_stats before = stats();
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    CHECK_EQ_INT(stats().disk_writes - before.disk_writes, 0);
    CHECK_EQ_INT(entries("", NULL, 0), 0);
    CHECK(log_says(ctx, why));
    CHECK(log_says(ctx, cache_dir));
    cblob_context_destroy(ctx);
}

static void give_folder_away(void)
{
    if (geteuid() != 0 || chown(cache_dir, STRANGER, STRANGER) != 0)
        SKIP("changing the folder's owner needs root");
}

static void open_folder_to_others(void)
{
    chmod(cache_dir, 0777);
}

static void open_folder_to_the_group(void)
{
    chmod(cache_dir, 0770);
}

TEST(cache_folder_of_another_owner_is_refused) { check_folder_refused(give_folder_away, "owned by uid 12345"); }
TEST(cache_folder_writable_by_others_is_refused) { check_folder_refused(open_folder_to_others, "writable by group or others"); }
TEST(cache_folder_writable_by_the_group_is_refused) { check_folder_refused(open_folder_to_the_group, "writable by group or others"); }

/* An entry is refused: the family is compiled again and the entry replaced by one of ours. */
static void check_entry_refused(void (*spoil)(const char *path), const char *why)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    char path[512];
    CHECK_EQ_INT(entries("scale-", path, sizeof path), 1);
    spoil(path);
    cb_cuda_cache_forget_memory();
    const cb_cuda_cache_stats before = stats();
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    CHECK_EQ_INT(stats().disk_hits - before.disk_hits, 0);
    CHECK_EQ_INT(stats().compiles - before.compiles, 1);
    CHECK(log_says(ctx, why));
    CHECK(log_says(ctx, path));
    struct stat info;
    CHECK(lstat(path, &info) == 0 && S_ISREG(info.st_mode) && info.st_uid == geteuid() && (info.st_mode & 077) == 0);
    cblob_context_destroy(ctx);
}

static void give_entry_away(const char *path)
{
    if (geteuid() != 0 || chown(path, STRANGER, STRANGER) != 0)
        SKIP("changing the entry's owner needs root");
}

static void open_entry_to_the_group(const char *path)
{
    chmod(path, 0660);
}

/* A valid entry elsewhere, reached through a symbolic link under the entry's name. */
static char elsewhere[160];

static void remove_elsewhere(void)
{
    unlink(elsewhere);
}

static void link_entry_elsewhere(const char *path)
{
    snprintf(elsewhere, sizeof elsewhere, "%s.elsewhere", cache_dir);
    if (rename(path, elsewhere) != 0 || symlink(elsewhere, path) != 0)
        SKIP("cannot make the symbolic link");
    atexit(remove_elsewhere);
}

TEST(cache_entry_of_another_owner_is_refused) { check_entry_refused(give_entry_away, "owned by uid 12345"); }
TEST(cache_entry_writable_by_the_group_is_refused) { check_entry_refused(open_entry_to_the_group, "writable by group or others"); }
TEST(cache_entry_behind_a_symbolic_link_is_refused) { check_entry_refused(link_entry_elsewhere, "symbolic link"); }

TEST(cache_folders_and_entries_are_private)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    char nested[192];
    snprintf(nested, sizeof nested, "%s/made/by/cblob", cache_dir);
    setenv("CBLOB_KERNEL_CACHE_DIR", nested, 1);
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    struct stat info;
    CHECK(stat(nested, &info) == 0 && (info.st_mode & 0777) == 0700);
    DIR *dir = opendir(nested);
    CHECK(dir != NULL);
    int checked = 0;
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", nested, entry->d_name);
        if (entry->d_name[0] == '.')
            continue;
        CHECK(stat(path, &info) == 0 && (info.st_mode & 0777) == 0600);
        unlink(path);
        ++checked;
    }
    closedir(dir);
    CHECK_EQ_INT(checked, 1);
    for (int depth = 0; depth < 3; ++depth) {
        rmdir(nested);
        *strrchr(nested, '/') = '\0';
    }
    cblob_context_destroy(ctx);
}

/* As an unprivileged user: a folder root owns (as after `sudo` kept HOME) is refused. The outer
 * test runs as root and starts the inner one as nobody (setpriv); the inner one skips otherwise. */
TEST(cache_root_owned_folder_is_refused_by_an_unprivileged_user)
{
    if (geteuid() != 0)
        SKIP("starts the check as another user, which needs root");
    if (getenv("CBLOB_CUDA_DRIVER") == NULL)
        SKIP("runs the inner test on the test double of the driver");
    char folder[128] = "/tmp/cblob-rootowned-XXXXXX";
    CHECK(mkdtemp(folder) != NULL);
    CHECK(chmod(folder, 0755) == 0); /* readable and searchable by nobody, writable by root only */
    char self[512];
    const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(length > 0);
    self[length] = '\0';
    char command[2048];
    snprintf(command, sizeof command,
             "CBLOB_KERNEL_CACHE=disk CBLOB_KERNEL_CACHE_DIR='%s' setpriv --reuid=65534 --regid=65534 --clear-groups "
             "'%s' cache_root_owned_folder_inner",
             folder, self);
    const int status = system(command);
    rmdir(folder);
    CHECK(status != -1 && WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
        SKIP("the unprivileged user cannot run the test (the build tree or the double is not readable by nobody)");
    CHECK_EQ_INT(WEXITSTATUS(status), 0);
}

TEST(cache_root_owned_folder_inner)
{
    if (geteuid() == 0 || getenv("CBLOB_KERNEL_CACHE_DIR") == NULL)
        SKIP("the inner half of cache_root_owned_folder_is_refused_by_an_unprivileged_user, run as nobody");
    REQUIRE_GPU();
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    const cb_cuda_cache_stats before = stats();
    CHECK_OK(load(device, CB_CUDA_FAMILY_SCALE));
    CHECK_EQ_INT(stats().disk_writes - before.disk_writes, 0);
    CHECK_EQ_INT(stats().disk_hits - before.disk_hits, 0);
    CHECK(log_says(ctx, "owned by uid 0"));
    cblob_context_destroy(ctx);
}

/* ---- modes ------------------------------------------------------------------------------------------ */

TEST(cache_memory_mode_writes_nothing_to_disk)
{
    REQUIRE_GPU();
    CHECK(use_cache("memory"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    const cb_cuda_cache_stats before = stats();
    CHECK_OK(load(device, CB_CUDA_FAMILY_AXPY));
    CHECK_OK(load(device, CB_CUDA_FAMILY_AXPY));
    CHECK_EQ_INT(stats().compiles - before.compiles, 1);
    CHECK_EQ_INT(entries("", NULL, 0), 0);
    cb_cuda_cache_forget_memory();
    CHECK_OK(load(device, CB_CUDA_FAMILY_AXPY));
    CHECK_EQ_INT(stats().compiles - before.compiles, 2); /* nothing on disk to fall back on */
    cblob_cache_mode mode = -1;
    CHECK_OK(cblob_kernel_cache_mode(&mode));
    CHECK_EQ_INT(mode, CBLOB_KERNEL_CACHE_MEMORY);
    cblob_context_destroy(ctx);
}

TEST(cache_off_compiles_every_use)
{
    REQUIRE_GPU();
    CHECK(use_cache("off"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    const cb_cuda_cache_stats before = stats();
    cblob_blob *holder = NULL;
    void *x = device_array(ctx, CBLOB_DTYPE_FLOAT32, 64, 0, &holder);
    CHECK(x != NULL);
    CHECK_OK(cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].scale(device, 64, 2.0, x));
    CHECK_OK(cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].scale(device, 64, 2.0, x));
    CHECK_EQ_INT(stats().compiles - before.compiles, 2);
    CHECK_EQ_INT(entries("", NULL, 0), 0);
    CHECK(host_element(holder, 3) == (double)((float)value_at(3) * 4.0f));
    int32_t compiled = -1;
    CHECK_ERROR(cblob_kernel_cache_warm_up(ctx, 0, &compiled), CBLOB_ERR_STATE);
    CHECK_EQ_INT(compiled, -1);
    cblob_cache_mode mode = -1;
    CHECK_OK(cblob_kernel_cache_mode(&mode));
    CHECK_EQ_INT(mode, CBLOB_KERNEL_CACHE_OFF);
    cblob_blob_destroy(holder);
    cblob_context_destroy(ctx);
}

/* ---- the folder's name ------------------------------------------------------------------------------ */

static void check_cache_dir(const char *expected, cblob_cache_mode expected_mode)
{
    char dir[512];
    size_t length = 0;
    CHECK_OK(cblob_kernel_cache_dir(dir, sizeof dir, &length));
    CHECK_MSG(strcmp(dir, expected) == 0, "cache folder \"%s\", expected \"%s\"", dir, expected);
    cblob_cache_mode mode = -1;
    CHECK_OK(cblob_kernel_cache_mode(&mode));
    CHECK_EQ_INT(mode, expected_mode);
}

TEST(cache_dir_from_cblob_kernel_cache_dir)
{
    setenv("CBLOB_KERNEL_CACHE_DIR", "/somewhere/kernels", 1);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    unsetenv("CBLOB_KERNEL_CACHE");
    check_cache_dir("/somewhere/kernels", CBLOB_KERNEL_CACHE_DISK);
}

TEST(cache_dir_from_xdg_cache_home)
{
    unsetenv("CBLOB_KERNEL_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    setenv("HOME", "/home/someone", 1);
    unsetenv("CBLOB_KERNEL_CACHE");
    check_cache_dir("/xdg/cblob/kernels", CBLOB_KERNEL_CACHE_DISK);
}

TEST(cache_dir_from_home_when_xdg_cache_home_is_relative)
{
    unsetenv("CBLOB_KERNEL_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "relative/cache", 1); /* the XDG spec says to ignore it */
    setenv("HOME", "/home/someone", 1);
    unsetenv("CBLOB_KERNEL_CACHE");
    check_cache_dir("/home/someone/.cache/cblob/kernels", CBLOB_KERNEL_CACHE_DISK);
}

TEST(cache_without_any_folder_keeps_kernels_in_memory)
{
    unsetenv("CBLOB_KERNEL_CACHE_DIR");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    unsetenv("CBLOB_KERNEL_CACHE");
    check_cache_dir("", CBLOB_KERNEL_CACHE_MEMORY);
}

TEST(cache_mode_with_an_unknown_value_is_disk_and_reported)
{
    setenv("CBLOB_KERNEL_CACHE", "sometimes", 1);
    setenv("CBLOB_KERNEL_CACHE_DIR", "/somewhere/kernels", 1);
    check_cache_dir("/somewhere/kernels", CBLOB_KERNEL_CACHE_DISK);
    char report[4096];
    size_t length = 0;
    CHECK_OK(cblob_gpu_report(report, sizeof report, &length));
    CHECK(strstr(report, "CBLOB_KERNEL_CACHE='sometimes' is not off, memory or disk; using disk") != NULL);
}

/* ---- concurrent first use --------------------------------------------------------------------------- */

typedef struct racer {
    const cb_device *device;
    pthread_barrier_t *start;
    cblob_status status;
    cbcu_function function;
} racer;

static void *race(void *argument)
{
    racer *r = argument;
    pthread_barrier_wait(r->start);
    cb_cuda_kernel kernel = {0};
    r->status = cb_cuda_kernel_get(r->device, CB_CUDA_FAMILY_SUMSQ, CBLOB_DTYPE_FLOAT64, &kernel);
    r->function = kernel.function;
    return NULL;
}

TEST(cache_16_thread_first_use_compiles_once)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    const cb_cuda_cache_stats before = stats();
    enum { THREADS = 16 };
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    pthread_t threads[THREADS];
    racer racers[THREADS];
    for (int i = 0; i < THREADS; ++i) {
        racers[i] = (racer){device, &start, CBLOB_ERR_INTERNAL, NULL};
        CHECK(pthread_create(&threads[i], NULL, race, &racers[i]) == 0);
    }
    for (int i = 0; i < THREADS; ++i)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; ++i) {
        CHECK_OK(racers[i].status);
        CHECK(racers[i].function != NULL && racers[i].function == racers[0].function);
    }
    CHECK_EQ_INT(stats().compiles - before.compiles, 1);
    CHECK_EQ_INT(stats().disk_writes - before.disk_writes, 1);
    cblob_context_destroy(ctx);
}

/* ---- warming up --------------------------------------------------------------------------------------- */

TEST(warm_up_loads_every_family_for_the_device)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    int32_t compiled = -1;
    CHECK_OK(cblob_kernel_cache_warm_up(ctx, 0, &compiled));
    CHECK_EQ_INT(compiled, CB_CUDA_FAMILY_COUNT);
    CHECK_EQ_INT(entries("", NULL, 0), CB_CUDA_FAMILY_COUNT);
    CHECK_OK(cblob_kernel_cache_warm_up(ctx, 0, &compiled));
    CHECK_EQ_INT(compiled, 0);
    cb_cuda_cache_forget_memory();
    const cb_cuda_cache_stats before = stats();
    CHECK_OK(cblob_kernel_cache_warm_up(ctx, 0, &compiled)); /* the next process: all from disk */
    CHECK_EQ_INT(compiled, 0);
    CHECK_EQ_INT(stats().disk_hits - before.disk_hits, CB_CUDA_FAMILY_COUNT);
    cblob_context_destroy(ctx);
}

TEST(warm_up_for_an_architecture_needs_no_gpu)
{
    const cb_cuda_nvrtc *compiler = cb_cuda_nvrtc_get();
    if (compiler->status != CBLOB_OK)
        SKIP("no NVRTC to compile with");
    setenv("CBLOB_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    int32_t compiled = -1;
    CHECK_OK(cblob_kernel_cache_warm_up(ctx, 90, &compiled));
    CHECK_EQ_INT(compiled, CB_CUDA_FAMILY_COUNT);
    char path[512];
    CHECK_EQ_INT(entries("axpy-sm_90-", path, sizeof path), 1);
    CHECK(strstr(path, ".cubin") != NULL);
    CHECK_OK(cblob_kernel_cache_warm_up(ctx, 90, &compiled));
    CHECK_EQ_INT(compiled, 0);
    CHECK_OK(cblob_kernel_cache_warm_up(ctx, 80, &compiled));
    CHECK_EQ_INT(compiled, CB_CUDA_FAMILY_COUNT);
    CHECK_EQ_INT(entries("", NULL, 0), 2 * CB_CUDA_FAMILY_COUNT);
    /* Newer than NVRTC knows: PTX for its newest architecture, for the driver to finish. */
    CHECK_OK(cblob_kernel_cache_warm_up(ctx, 990, &compiled));
    CHECK_EQ_INT(entries("axpy-compute_", path, sizeof path), 1);
    CHECK(strstr(path, ".ptx") != NULL);
    compiled = -1;
    CHECK_ERROR(cblob_kernel_cache_warm_up(ctx, 50, &compiled), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "cannot compile for compute capability 5.0") != NULL);
    CHECK_EQ_INT(compiled, -1);
    int32_t devices = 0;
    CHECK_STATUS(cblob_gpu_probe(&devices), CBLOB_ERR_NO_DRIVER); /* and indeed no GPU */
    cblob_context_destroy(ctx);
}

TEST(warm_up_for_an_architecture_reports_an_unwritable_folder)
{
    if (cb_cuda_nvrtc_get()->status != CBLOB_OK)
        SKIP("no NVRTC to compile with");
    setenv("CBLOB_KERNEL_CACHE_DIR", "/proc", 1);
    setenv("CBLOB_KERNEL_CACHE", "disk", 1);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    int32_t compiled = -1;
    CHECK_ERROR(cblob_kernel_cache_warm_up(ctx, 80, &compiled), CBLOB_ERR_IO);
    CHECK(strstr(cblob_last_error_message(), "/proc/") != NULL);
    cblob_context_destroy(ctx);
}

TEST(warm_up_for_an_architecture_needs_the_disk_cache)
{
    CHECK(use_cache("memory"));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    int32_t compiled = -1;
    CHECK_ERROR(cblob_kernel_cache_warm_up(ctx, 80, &compiled), CBLOB_ERR_STATE);
    cblob_context_destroy(ctx);
}

/* ---- the cache's writer with each file operation failing in turn (issue 27) ------------------------ */

static const struct {
    int error;
    const char *name;
} io_errors[] = {{ENOSPC, "ENOSPC"}, {EIO, "EIO"}, {EINTR, "EINTR"}, {CB_FAULT_SHORT, "a short write"}};

/* src/io's temporaries left in the cache folder. */
static int temporaries(void)
{
    int count = 0;
    DIR *dir = opendir(cache_dir);
    if (dir == NULL)
        return -1;
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;)
        count += strncmp(entry->d_name, ".cblob-tmp-", 11) == 0;
    closedir(dir);
    return count;
}

/* Warming up for an architecture reports a failed write (writing is its whole point): with the nth
 * file operation failing, for n = 1, 2, ... until the writer runs out of them, while it writes the
 * one entry missing, the call fails naming the entry and the error, or (EINTR, a short write)
 * retries and succeeds; no temporary stays; and the entry is there whole (the next warm-up reads
 * it, rejecting nothing as damaged, and compiles nothing) or not at all. Each try compiles one
 * family with NVRTC (about half a second here), so the entry is verified only where it is. */
TEST(cache_entry_is_whole_or_absent_at_every_io_failure_of_its_writer)
{
    if (cb_cuda_nvrtc_get()->status != CBLOB_OK)
        SKIP("no NVRTC to compile with");
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    int32_t compiled = -1;
    CHECK_OK(cblob_kernel_cache_warm_up(ctx, 90, &compiled));
    CHECK_EQ_INT(compiled, CB_CUDA_FAMILY_COUNT);
    char prefix[128], path[512];
    snprintf(prefix, sizeof prefix, "%s-sm_90-", cb_cuda_families[CB_CUDA_FAMILY_COUNT - 1].name);
    int failures = 0;
    for (size_t e = 0; e < sizeof io_errors / sizeof io_errors[0]; ++e) {
        bool done = false;
        const bool retried = io_errors[e].error == EINTR || io_errors[e].error == CB_FAULT_SHORT;
        for (int64_t nth = 1; !done && nth < 1000; ++nth) {
            if (entries(prefix, path, sizeof path) == 1)
                CHECK(unlink(path) == 0); /* the one entry the next warm-up compiles and writes */
            compiled = -1;
            cb_fault_arm(CB_FAULT_IO, nth, io_errors[e].error, false);
            const cblob_status status = cblob_kernel_cache_warm_up(ctx, 90, &compiled);
            done = !cb_fault_fired(CB_FAULT_IO);
            cb_fault_arm(CB_FAULT_IO, 0, 0, false);
            failures += !done;
            const char *message = status == CBLOB_OK ? "" : cblob_last_error_message();
            CHECK_MSG(status == CBLOB_OK || (!retried && status == CBLOB_ERR_IO &&
                                             strstr(message, "cannot write the kernel cache entry") != NULL &&
                                             strstr(message, prefix) != NULL &&
                                             strstr(message, strerror(io_errors[e].error)) != NULL),
                      "I/O operation #%lld failing with %s: %s (%s)", (long long)nth, io_errors[e].name,
                      cblob_status_name(status), message);
            /* A read of another family's entry failing makes that family compile too (its entry
             * kept and written again): two compiled. */
            CHECK_MSG(status == CBLOB_OK ? compiled == 1 || compiled == 2 : compiled == -1, "%d compiled", compiled);
            CHECK_EQ_INT(entries(prefix, NULL, 0), status == CBLOB_OK ? 1 : 0);
            CHECK_EQ_INT(temporaries(), 0);
            if (status == CBLOB_OK) {
                const cb_cuda_cache_stats before = stats();
                CHECK_OK(cblob_kernel_cache_warm_up(ctx, 90, &compiled));
                CHECK_EQ_INT(compiled, 0);
                CHECK_EQ_INT(stats().disk_rejected - before.disk_rejected, 0);
            }
        }
        CHECK_MSG(done, "%s: the cache's writer never ran out of I/O operations", io_errors[e].name);
    }
    CHECK_MSG(failures >= 4 * 4, "only %d failures were made", failures); /* open, write, rename at least */
    printf("the kernel cache's writer: %d I/O operations made to fail, one at a time\n", failures);
    cblob_context_destroy(ctx);
}

/* A kernel's first use with the cache's write failing at one step: the call succeeds (the cache is
 * no part of its result), nothing is left in the folder, the log says once what failed, and the
 * process goes on without writing: the next family compiles and stays in memory, and a family
 * unloaded compiles again rather than reading a half-written entry. */
static void check_failed_write_is_not_fatal(cb_fault_step step, int error)
{
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    const cb_cuda_cache_stats before = stats();
    cb_fault_arm(step, 1, error, false);
    const cblob_status status = load(device, CB_CUDA_FAMILY_ASUM);
    const bool fired = cb_fault_fired(step);
    cb_fault_arm(step, 0, 0, false);
    CHECK(fired);
    CHECK_OK(status);
    CHECK_EQ_INT(entries("", NULL, 0), 0);
    CHECK_EQ_INT(temporaries(), 0);
    CHECK(log_says(ctx, "cannot be written"));
    CHECK(log_says(ctx, strerror(error)));
    CHECK_OK(load(device, CB_CUDA_FAMILY_AXPY));
    cb_cuda_cache_forget_memory();
    CHECK_OK(load(device, CB_CUDA_FAMILY_ASUM));
    const cb_cuda_cache_stats after = stats();
    CHECK_EQ_INT(after.compiles - before.compiles, 3);
    CHECK_EQ_INT(after.disk_writes - before.disk_writes, 0);
    CHECK_EQ_INT(after.disk_hits - before.disk_hits, 0);
    CHECK_EQ_INT(entries("", NULL, 0), 0);
    cblob_cache_mode mode = -1;
    CHECK_OK(cblob_kernel_cache_mode(&mode));
    CHECK_EQ_INT(mode, CBLOB_KERNEL_CACHE_MEMORY);
    cblob_context_destroy(ctx);
}

TEST(cache_entry_whose_temporary_cannot_be_made_is_not_fatal) { check_failed_write_is_not_fatal(CB_FAULT_OPEN, EIO); }
TEST(cache_entry_on_a_full_disk_is_not_fatal) { check_failed_write_is_not_fatal(CB_FAULT_WRITE, ENOSPC); }
TEST(cache_entry_that_cannot_be_put_in_place_is_not_fatal) { check_failed_write_is_not_fatal(CB_FAULT_RENAME, EIO); }

/* ---- compiling --------------------------------------------------------------------------------------- */

TEST(compile_errors_carry_the_compiler_log)
{
    const cb_cuda_nvrtc *compiler = NULL;
    if (cb_cuda_nvrtc_ready(&compiler) != CBLOB_OK)
        SKIP("no NVRTC to compile with");
    cb_cuda_target target;
    CHECK_OK(cb_cuda_target_for(compiler, 0, 80, &target));
    cb_cuda_image image = {0};
    CHECK_ERROR(cb_cuda_compile_source(compiler, "broken", "#error the source asked to fail\n", &target, &image),
                CBLOB_ERR_COMPILE);
    CHECK(strstr(cblob_last_error_message(), "#error") != NULL);
    CHECK(strstr(cblob_last_error_message(), "broken") != NULL);
    CHECK(image.bytes == NULL);
}

TEST(a_device_newer_than_nvrtc_runs_ptx)
{
    if (getenv("CBLOB_CUDA_DRIVER") == NULL)
        SKIP("needs the test double of the driver, which can claim any compute capability");
    setenv("CBLOB_FAKE_CUDA_ARCH", "990", 1);
    REQUIRE_GPU();
    CHECK(use_cache("disk"));
    cblob_context *ctx = NULL;
    const cb_device *device = open_device(&ctx);
    CHECK(device != NULL);
    cblob_blob *holder = NULL;
    void *x = device_array(ctx, CBLOB_DTYPE_FLOAT64, 100, 0, &holder);
    CHECK(x != NULL);
    CHECK_OK(cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT64].scale(device, 100, -1.0, x));
    CHECK(host_element(holder, 7) == -value_at(7));
    char path[512];
    CHECK_EQ_INT(entries("scale-compute_", path, sizeof path), 1);
    cblob_blob_destroy(holder);
    cblob_context_destroy(ctx);
}
