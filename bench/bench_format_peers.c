/* SPDX-License-Identifier: BSD-2-Clause */
/* safetensors and npz: cblob's C API against the packages people use instead (the `safetensors`
 * package and NumPy's npz), cold and warm, measured in one run.
 *
 *   bench_format_peers [--size-mib N] [--gap SECONDS] [--rounds N] [--warm N] [--folder DIR]
 *                      [--python PATH] [--only SECTION] [--before BENCH_FORMAT_PEERS]
 *
 * A model of 16 layers, each a float32 tensor of SIZE/16 (default 1024 MiB in all) and a bias of
 * 256 values, is written by cblob to DIR (default $TMPDIR or /tmp) as safetensors and as npz;
 * then each contender runs in a fresh process after GAP seconds idle (bench_process.h: cold once,
 * then WARM more times in the same process, default 3), each round in a fresh order (default 3):
 *
 * - read a whole safetensors file: cblob_model_open_safetensors_file against
 *   safetensors.numpy.load_file, and read(2) of the file into fresh memory;
 * - read one tensor (the 8th, SIZE/16) of it: the cblob open and that blob's values, eager and
 *   lazy (cblob_file_open with CBLOB_OPEN_LAZY: the header, then that tensor's bytes), against
 *   safe_open(...).get_tensor;
 * - read a whole npz file: cblob_model_open_npz_file against numpy.load with every member read;
 * - write: cblob_model_to_safetensors_file and cblob_model_to_npz_file (the model opened first, not
 *   timed) against safetensors.numpy.save_file and numpy.savez (the arrays read first, not timed).
 *   cblob's writers fsync the file before renaming it into place (src/io); the packages do not,
 *   so each write also has the package's row made as durable as cblob's: written to a temporary
 *   name beside the target, fsync'ed and renamed over it (bench/format_peers.py's -durable modes).
 *
 * The packages' side is bench/format_peers.py under PATH (default: the bench environment of
 * scripts/python-env.sh, build/python-env/bench/bin/python, made by
 * `scripts/python-env.sh build/python-env --with-bench`); the packages' times are taken around
 * their calls inside Python, cblob's around the C calls. Ratios are the package's time over
 * cblob's: 1.00 or more is cblob as fast or faster. --only runs one section: st-read, st-one,
 * npz-read, st-write or npz-write. --before adds, to the whole-file reads and both writes, the
 * same cblob child run by another build's bench_format_peers (the library before a change: say
 * /work/main/build/release/bench/bench_format_peers), so that before and after are measured side
 * by side in one run. */
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_process.h"
#include "bench_timing.h"
#include "cblob/cblob.h"

extern char **environ;

#define MAX_WARM 64
#define LAYERS 16
#define ONE_LAYER 7

static void die(const char *what)
{
    fprintf(stderr, "bench_format_peers: %s: %s\n", what, cblob_last_error_message());
    exit(1);
}

static void must(cblob_status status, const char *what)
{
    if (status != CBLOB_OK)
        die(what);
}

/* ---- children (cblob's side) ------------------------------------------------------------- */

static cblob_context *context;

static double read_safetensors(const char *path, const char *unused)
{
    (void)unused;
    cblob_model *model = NULL;
    const double start = bench_now();
    must(cblob_model_open_safetensors_file(context, path, &model), "cblob_model_open_safetensors_file");
    const double took = bench_now() - start;
    cblob_model_destroy(model);
    return took;
}

static double read_one_tensor(const char *path, const char *unused)
{
    (void)unused;
    cblob_model *model = NULL;
    cblob_blob *blob = NULL;
    const void *values = NULL;
    const double start = bench_now();
    must(cblob_model_open_safetensors_file(context, path, &model), "cblob_model_open_safetensors_file");
    must(cblob_model_layer_blob(model, ONE_LAYER, 0, &blob), "cblob_model_layer_blob");
    must(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, &values), "cblob_blob_cpu_ptr");
    const double took = bench_now() - start;
    cblob_blob_destroy(blob);
    cblob_model_destroy(model);
    return took;
}

/* The same through a lazy open (cblob_file_open with CBLOB_OPEN_LAZY): the header, then that
 * tensor's bytes only. */
static double read_one_tensor_lazily(const char *path, const char *unused)
{
    (void)unused;
    cblob_file *file = NULL;
    cblob_model *model = NULL;
    cblob_blob *blob = NULL;
    const void *values = NULL;
    const double start = bench_now();
    must(cblob_file_open(context, path, CBLOB_OPEN_LAZY, 0, &file), "cblob_file_open");
    must(cblob_file_model(file, &model), "cblob_file_model");
    must(cblob_model_layer_blob(model, ONE_LAYER, 0, &blob), "cblob_model_layer_blob");
    must(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, &values), "cblob_blob_cpu_ptr");
    const double took = bench_now() - start;
    cblob_blob_destroy(blob);
    cblob_file_destroy(file);
    return took;
}

static double read_npz(const char *path, const char *unused)
{
    (void)unused;
    cblob_model *model = NULL;
    const double start = bench_now();
    must(cblob_model_open_npz_file(context, path, &model), "cblob_model_open_npz_file");
    const double took = bench_now() - start;
    cblob_model_destroy(model);
    return took;
}

static double read_plain(const char *path, const char *unused)
{
    (void)unused;
    struct stat info;
    if (stat(path, &info) != 0)
        die(path);
    const size_t size = (size_t)info.st_size;
    const double start = bench_now();
    char *bytes = malloc(size);
    const int fd = open(path, O_RDONLY);
    if (bytes == NULL || fd < 0)
        die("read(2) set-up");
    for (size_t done = 0; done < size;) {
        const ssize_t n = read(fd, bytes + done, size - done < ((size_t)64 << 20) ? size - done : (size_t)64 << 20);
        if (n <= 0)
            die("read(2)");
        done += (size_t)n;
    }
    const double took = bench_now() - start;
    close(fd);
    volatile char sink = bytes[size / 2];
    (void)sink;
    free(bytes);
    return took;
}

static cblob_model *source_model;

static double write_safetensors(const char *unused, const char *out)
{
    (void)unused;
    unlink(out);
    const double start = bench_now();
    must(cblob_model_to_safetensors_file(source_model, 0, out), "cblob_model_to_safetensors_file");
    return bench_now() - start;
}

static double write_npz(const char *unused, const char *out)
{
    (void)unused;
    unlink(out);
    const double start = bench_now();
    must(cblob_model_to_npz_file(source_model, 0, out), "cblob_model_to_npz_file");
    return bench_now() - start;
}

static int child_main(const char *mode, const char *path, int warm, const char *out)
{
    must(cblob_context_create(&context), "cblob_context_create");
    double (*work)(const char *, const char *) = NULL;
    if (strcmp(mode, "st-read") == 0)
        work = read_safetensors;
    else if (strcmp(mode, "st-one") == 0)
        work = read_one_tensor;
    else if (strcmp(mode, "st-one-lazy") == 0)
        work = read_one_tensor_lazily;
    else if (strcmp(mode, "npz-read") == 0)
        work = read_npz;
    else if (strcmp(mode, "read") == 0)
        work = read_plain;
    else if (strcmp(mode, "st-write") == 0 || strcmp(mode, "npz-write") == 0) {
        /* The model to write, read first (not timed), as the packages' side reads its arrays. */
        must(cblob_model_open_safetensors_file(context, path, &source_model), "cblob_model_open_safetensors_file");
        work = strcmp(mode, "st-write") == 0 ? write_safetensors : write_npz;
    } else
        return 2;
    double times[MAX_WARM + 1];
    for (int i = 0; i <= warm; ++i)
        times[i] = work(path, out);
    bench_child_report(times, warm);
    if (out != NULL)
        unlink(out);
    return 0;
}

/* ---- the parent ------------------------------------------------------------------------------- */

/* Whether the section runs (--only NAME runs that one alone). */
static bool runs(const char *only, const char *section)
{
    return only == NULL || strcmp(only, section) == 0;
}

/* Written in a child, so that this process never holds the model's memory. */
static int child_write(const char *safetensors_path, const char *npz_path, const char *mib)
{
    must(cblob_context_create(&context), "cblob_context_create");
    cblob_model *model = NULL;
    must(cblob_model_create(context, CBLOB_NET_FORMAT_V2, "bench", &model), "cblob_model_create");
    const int64_t per_layer = (int64_t)(((size_t)atoll(mib) << 20) / sizeof(float) / LAYERS);
    for (int i = 0; i < LAYERS; ++i) {
        const int64_t dims[2] = {256, per_layer / 256}, bias_dims[1] = {256};
        cblob_blob *blobs[2] = {NULL, NULL};
        must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 2, dims, &blobs[0]), "cblob_blob_create");
        must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, bias_dims, &blobs[1]), "cblob_blob_create");
        must(cblob_blob_fill(blobs[0], CBLOB_PART_DATA, 0.5 + i), "cblob_blob_fill");
        must(cblob_blob_fill(blobs[1], CBLOB_PART_DATA, -1.0), "cblob_blob_fill");
        char name[32];
        snprintf(name, sizeof name, "fc%d", i);
        must(cblob_model_add_layer(model, name, "InnerProduct", blobs, 2), "cblob_model_add_layer");
        cblob_blob_destroy(blobs[0]);
        cblob_blob_destroy(blobs[1]);
    }
    must(cblob_model_to_safetensors_file(model, 0, safetensors_path), "cblob_model_to_safetensors_file");
    must(cblob_model_to_npz_file(model, 0, npz_path), "cblob_model_to_npz_file");
    cblob_model_destroy(model);
    cblob_context_destroy(context);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2], argv[3], atoi(argv[4]) < MAX_WARM ? atoi(argv[4]) : MAX_WARM,
                          argc > 5 ? argv[5] : NULL);
    if (argc == 5 && strcmp(argv[1], "--write") == 0)
        return child_write(argv[2], argv[3], argv[4]);
    int mib = 1024, rounds = 3, warm = 3;
    double gap = 3;
    const char *folder = getenv("TMPDIR") != NULL && getenv("TMPDIR")[0] != '\0' ? getenv("TMPDIR") : "/tmp";
    const char *python = CBLOB_SOURCE_DIR "/build/python-env/bench/bin/python";
    const char *only = NULL, *before = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--size-mib") == 0 && i + 1 < argc)
            mib = atoi(argv[++i]);
        else if (strcmp(argv[i], "--gap") == 0 && i + 1 < argc)
            gap = atof(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = bench_parse_rounds(argv[++i]);
        else if (strcmp(argv[i], "--warm") == 0 && i + 1 < argc)
            warm = atoi(argv[++i]);
        else if (strcmp(argv[i], "--folder") == 0 && i + 1 < argc)
            folder = argv[++i];
        else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc)
            python = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--before") == 0 && i + 1 < argc)
            before = argv[++i];
        else {
            fprintf(stderr, "usage: bench_format_peers [--size-mib N] [--gap SECONDS] [--rounds N] [--warm N] "
                            "[--folder DIR] [--python PATH] [--only st-read|st-one|npz-read|st-write|npz-write] "
                            "[--before OTHER_BENCH_FORMAT_PEERS]\n");
            return 2;
        }
    }
    if (mib < 16 || warm < 0 || warm > MAX_WARM || gap < 0) {
        fprintf(stderr, "bench_format_peers: SIZE at least 16 MiB, 0 to %d warm repetitions\n", MAX_WARM);
        return 2;
    }
    const bool have_python = access(python, X_OK) == 0;
    if (before != NULL && access(before, X_OK) != 0) {
        fprintf(stderr, "bench_format_peers: --before %s is not a program\n", before);
        return 2;
    }
    const int with_before = before != NULL ? 1 : 0;
    char self[4096], st_path[4096], npz_path[4096], st_out[4200], npz_out[4200], mib_text[32], warm_text[16];
    const ssize_t self_length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (self_length <= 0)
        die("readlink /proc/self/exe");
    self[self_length] = '\0';
    snprintf(st_path, sizeof st_path, "%s/bench_format_peers_%ld.safetensors", folder, (long)getpid());
    snprintf(npz_path, sizeof npz_path, "%s/bench_format_peers_%ld.npz", folder, (long)getpid());
    snprintf(st_out, sizeof st_out, "%s/bench_format_peers_%ld_out.safetensors", folder, (long)getpid());
    snprintf(npz_out, sizeof npz_out, "%s/bench_format_peers_%ld_out.npz", folder, (long)getpid());
    snprintf(mib_text, sizeof mib_text, "%d", mib);
    snprintf(warm_text, sizeof warm_text, "%d", warm);
    bench_print_machine("bench_format_peers");
    printf("cblob %s; %d MiB in %d float32 tensors; %d rounds, each child after %.1f s idle; warm = median of %d more in\n"
           "the same process; ratio = the package's time / cblob's (above 1: cblob faster); GB/s = 1e9 bytes/s\n",
           cblob_version(), mib, LAYERS, rounds, gap, warm);
    if (!have_python)
        printf("the packages' side is not run: no Python at %s (scripts/python-env.sh build/python-env --with-bench)\n",
               python);
    char *write_argv[] = {self, "--write", st_path, npz_path, mib_text, NULL};
    pid_t writer;
    int status = 0;
    if (posix_spawn(&writer, self, NULL, NULL, write_argv, environ) != 0 || waitpid(writer, &status, 0) != writer ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("writing the model");
    const double bytes = (double)((size_t)mib << 20);
    char script[4096], one_name[32];
    snprintf(script, sizeof script, "%s/format_peers.py", CBLOB_BENCH_DIR);
    snprintf(one_name, sizeof one_name, "fc%d.0", ONE_LAYER);

    const char *const st_read_c[] = {self, "--child", "st-read", st_path, warm_text, NULL};
    const char *const st_read_py[] = {python, script, "st-read", st_path, warm_text, NULL};
    const char *const plain_read[] = {self, "--child", "read", st_path, warm_text, NULL};
    const char *const st_read_before[] = {before, "--child", "st-read", st_path, warm_text, NULL};
    bench_child st_read[] = {
        {.label = "safetensors.numpy.load_file", .argv = st_read_py},
        {.label = "cblob_model_open_safetensors_file", .argv = st_read_c},
        {.label = "read(2) of the file into fresh memory", .argv = plain_read},
        {.label = "cblob_model_open_safetensors_file, before", .argv = st_read_before},
    };
    if (have_python && runs(only, "st-read"))
        bench_children("read a whole safetensors file (ratio against the package)", st_read, 3 + with_before, rounds,
                       gap, bytes, 0);
    else if (runs(only, "st-read"))
        bench_children("read a whole safetensors file (ratio against read(2))", st_read + 1, 2 + with_before, rounds,
                       gap, bytes, 1);

    const char *const st_one_c[] = {self, "--child", "st-one", st_path, warm_text, NULL};
    const char *const st_one_lazy[] = {self, "--child", "st-one-lazy", st_path, warm_text, NULL};
    const char *const st_one_py[] = {python, script, "st-one", st_path, warm_text, one_name, NULL};
    bench_child st_one[] = {
        {.label = "safe_open(...).get_tensor", .argv = st_one_py},
        {.label = "cblob open + that blob's values", .argv = st_one_c},
        {.label = "cblob_file_open LAZY + that blob's values", .argv = st_one_lazy},
    };
    if (have_python && runs(only, "st-one"))
        bench_children("read one tensor (1/16 of the file) (ratio against the package)", st_one, 3, rounds, gap,
                       bytes / LAYERS, 0);

    const char *const npz_read_c[] = {self, "--child", "npz-read", npz_path, warm_text, NULL};
    const char *const npz_read_py[] = {python, script, "npz-read", npz_path, warm_text, NULL};
    const char *const npz_read_before[] = {before, "--child", "npz-read", npz_path, warm_text, NULL};
    bench_child npz_read[] = {
        {.label = "numpy.load, every member read", .argv = npz_read_py},
        {.label = "cblob_model_open_npz_file", .argv = npz_read_c},
        {.label = "cblob_model_open_npz_file, before", .argv = npz_read_before},
    };
    if (have_python && runs(only, "npz-read"))
        bench_children("read a whole npz file (ratio against NumPy)", npz_read, 2 + with_before, rounds, gap, bytes, 0);

    const char *const st_write_c[] = {self, "--child", "st-write", st_path, warm_text, st_out, NULL};
    const char *const st_write_py[] = {python, script, "st-write", st_path, warm_text, st_out, NULL};
    const char *const st_write_py_durable[] = {python, script, "st-write-durable", st_path, warm_text, st_out, NULL};
    const char *const st_write_before[] = {before, "--child", "st-write", st_path, warm_text, st_out, NULL};
    bench_child st_write[] = {
        {.label = "safetensors.numpy.save_file", .argv = st_write_py},
        {.label = "save_file to a temporary, fsync, rename", .argv = st_write_py_durable},
        {.label = "cblob_model_to_safetensors_file (fsync)", .argv = st_write_c},
        {.label = "cblob_model_to_safetensors_file (fsync), before", .argv = st_write_before},
    };
    if (have_python && runs(only, "st-write"))
        bench_children("write a safetensors file (ratio against the package)", st_write, 3 + with_before, rounds, gap,
                       bytes, 0);

    const char *const npz_write_c[] = {self, "--child", "npz-write", st_path, warm_text, npz_out, NULL};
    const char *const npz_write_py[] = {python, script, "npz-write", npz_path, warm_text, npz_out, NULL};
    const char *const npz_write_py_durable[] = {python, script, "npz-write-durable", npz_path, warm_text, npz_out, NULL};
    const char *const npz_write_before[] = {before, "--child", "npz-write", st_path, warm_text, npz_out, NULL};
    bench_child npz_write[] = {
        {.label = "numpy.savez", .argv = npz_write_py},
        {.label = "numpy.savez to a temporary, fsync, rename", .argv = npz_write_py_durable},
        {.label = "cblob_model_to_npz_file (fsync)", .argv = npz_write_c},
        {.label = "cblob_model_to_npz_file (fsync), before", .argv = npz_write_before},
    };
    if (have_python && runs(only, "npz-write"))
        bench_children("write an npz file (ratio against NumPy)", npz_write, 3 + with_before, rounds, gap, bytes, 0);
    unlink(st_path);
    unlink(npz_path);
    return 0;
}
