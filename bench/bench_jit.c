/* SPDX-License-Identifier: BSD-2-Clause */
/* The JIT and the kernel cache, timed (a benchmark, not a test: it prints what it measured and
 * how that compares with the targets, and always exits 0 when it could measure).
 *
 *   cold compile   NVRTC compiling one kernel family (all its dtypes) for the device's target,
 *                  CPU time of the process (NVRTC is single-threaded); the first compile of the
 *                  process also pays NVRTC's start-up and is reported apart.
 *   disk hit       a family not in memory: the entry read, verified and loaded into the device.
 *   memory hit     a loaded family's kernel looked up again.
 * (Bandwidth on a GPU, cuBLAS against the generated kernels included, is bench_gpu's.)
 *
 * Without a CUDA driver it runs against the test double of the driver (built with the tests),
 * whose "module load" is a memcpy: its disk-hit time is then the cache's own work only, and it
 * says so. Targets: disk hit < 2 ms, memory hit < 1 us, cold compile < 150 ms of CPU.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "cuda/families.h"
#include "cuda_cache.h"
#include "cuda_jit.h"

static double seconds(clockid_t clock)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof values[0], compare_doubles);
    return values[count / 2];
}

static const char *verdict(double value, double target)
{
    return value < target ? "meets" : "MISSES";
}

/* A real driver when the machine has one; else the test double, when the tests were built. */
static const char *choose_driver(void)
{
    if (getenv("CBLOB_CUDA_DRIVER") != NULL)
        return getenv("CBLOB_CUDA_DRIVER");
    void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (real != NULL)
        return "libcuda.so.1";
#ifdef CBLOB_FAKE_CUDA_DIR
    static char driver[512], cublas[512];
    snprintf(driver, sizeof driver, "%s/libcuda.so.1", CBLOB_FAKE_CUDA_DIR);
    snprintf(cublas, sizeof cublas, "%s/libcublas.so.13", CBLOB_FAKE_CUDA_DIR);
    if (access(driver, R_OK) == 0) {
        setenv("CBLOB_CUDA_DRIVER", driver, 1);
        setenv("CBLOB_CUBLAS_LIBRARY", cublas, 1);
        return driver;
    }
#endif
    return NULL;
}

static void cold_compile(const cb_cuda_nvrtc *compiler, int compute_capability)
{
    cb_cuda_target target;
    if (cb_cuda_target_for(compiler, 0, compute_capability, &target) != CBLOB_OK)
        return;
    enum { RUNS = 7 };
    for (int id = 0; id < CB_CUDA_FAMILY_COUNT; ++id) {
        double cpu[RUNS], wall[RUNS];
        const cb_cuda_family *family = &cb_cuda_families[id];
        for (int run = 0; run < RUNS; ++run) {
            const double cpu_start = seconds(CLOCK_PROCESS_CPUTIME_ID), wall_start = seconds(CLOCK_MONOTONIC);
            cb_cuda_image image = {0};
            if (cb_cuda_compile(compiler, family, &target, &image) != CBLOB_OK) {
                printf("  %s: %s\n", family->name, cblob_last_error_message());
                return;
            }
            cpu[run] = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
            wall[run] = seconds(CLOCK_MONOTONIC) - wall_start;
            cb_cuda_image_free(&image);
        }
        const double first = cpu[0];
        const double typical = median(cpu + 1, RUNS - 1);
        printf("  cold compile, %-6s (%s): %6.1f ms CPU (median of %d; wall %.1f ms)  -> %s the 150 ms target\n",
               family->name, target.name, typical * 1e3, RUNS - 1, median(wall + 1, RUNS - 1) * 1e3,
               verdict(typical, 0.150));
        if (id == 0)
            printf("    (the process's first compile, with NVRTC's start-up: %.1f ms CPU)\n", first * 1e3);
    }
}

static void cache_hits(const cb_device *device)
{
    enum { DISK_RUNS = 50 };
    double disk[DISK_RUNS];
    cb_cuda_kernel kernel;
    if (cb_cuda_kernel_get(device, CB_CUDA_FAMILY_AXPY, CBLOB_DTYPE_FLOAT32, &kernel) != CBLOB_OK) {
        printf("  cannot load a family: %s\n", cblob_last_error_message());
        return;
    }
    cb_cuda_cache_stats before, after;
    cb_cuda_cache_stats_get(&before);
    for (int run = 0; run < DISK_RUNS; ++run) {
        cb_cuda_cache_forget_memory();
        const double start = seconds(CLOCK_MONOTONIC);
        cb_cuda_kernel_get(device, CB_CUDA_FAMILY_AXPY, CBLOB_DTYPE_FLOAT32, &kernel);
        disk[run] = seconds(CLOCK_MONOTONIC) - start;
    }
    cb_cuda_cache_stats_get(&after);
    const double disk_hit = median(disk, DISK_RUNS);
    printf("  disk hit, axpy: %.3f ms (median of %d; %llu of them read from disk, %llu compiled)  -> %s the 2 ms target\n",
           disk_hit * 1e3, DISK_RUNS, (unsigned long long)(after.disk_hits - before.disk_hits),
           (unsigned long long)(after.compiles - before.compiles), verdict(disk_hit, 0.002));

    enum { LOOKUPS = 2000000 };
    const double start = seconds(CLOCK_MONOTONIC);
    uintptr_t checksum = 0;
    for (int i = 0; i < LOOKUPS; ++i) {
        cb_cuda_kernel_get(device, CB_CUDA_FAMILY_AXPY, CBLOB_DTYPE_FLOAT32, &kernel);
        checksum += (uintptr_t)kernel.function;
    }
    const double memory_hit = (seconds(CLOCK_MONOTONIC) - start) / LOOKUPS;
    printf("  memory hit, axpy: %.1f ns per lookup (%d lookups%s)  -> %s the 1 us target\n", memory_hit * 1e9, LOOKUPS,
           checksum != 0 ? "" : ", none found", verdict(memory_hit, 1e-6));
}

/* The cache folder holds entries only (no subfolders). */
static void remove_folder(const char *path)
{
    DIR *dir = opendir(path);
    for (struct dirent *entry; dir != NULL && (entry = readdir(dir)) != NULL;) {
        char file[1024];
        snprintf(file, sizeof file, "%s/%s", path, entry->d_name);
        if (entry->d_name[0] != '.' || (entry->d_name[1] != '\0' && strcmp(entry->d_name, "..") != 0))
            unlink(file);
    }
    if (dir != NULL)
        closedir(dir);
    rmdir(path);
}

int main(void)
{
    char cache_dir[] = "/tmp/cblob-bench-jit-XXXXXX";
    if (mkdtemp(cache_dir) == NULL) {
        perror("bench_jit: mkdtemp");
        return 1;
    }
    setenv("CBLOB_KERNEL_CACHE_DIR", cache_dir, 1);
    setenv("CBLOB_KERNEL_CACHE", "disk", 1);
    const char *driver = choose_driver();

    const cb_cuda_nvrtc *compiler = NULL;
    if (cb_cuda_nvrtc_ready(&compiler) != CBLOB_OK) {
        printf("bench_jit: %s\n", cblob_last_error_message());
        return 1;
    }
    printf("NVRTC %d.%d (%s)\n", compiler->major, compiler->minor, compiler->path);

    cblob_context *ctx = NULL;
    const cb_device *device = NULL;
    cblob_context_create(&ctx);
    const bool on_device = driver != NULL && cb_context_device(ctx, &device) == CBLOB_OK;
    const bool fake = on_device && strstr(driver, "fake_cuda") != NULL;
    int compute_capability = 80;
    if (on_device) {
        char name[256];
        size_t length = 0;
        cblob_gpu_device_name(device->index, name, sizeof name, &length);
        compute_capability = cb_cuda_device_state_of(device)->compute_capability;
        printf("device: %s%s\n", name, fake ? " (the test double of the driver: no GPU on this machine)" : "");
    } else {
        printf("device: none (%s); compiling for sm_80\n", driver == NULL ? "no driver, and no test double built" : cblob_last_error_message());
    }

    cold_compile(compiler, compute_capability);
    if (on_device) {
        cache_hits(device);
        if (fake)
            printf("    (the double loads a module by copying it: a real driver adds its cuModuleLoadData)\n");
    }
    cblob_context_destroy(ctx);
    remove_folder(cache_dir);
    return 0;
}
