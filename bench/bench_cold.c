/* SPDX-License-Identifier: BSD-2-Clause */
/* Cold and warm, measured in one run: what a user starting a program meets (a fresh process
 * after the machine sat idle for a while) and what a loop in one process meets, for the page
 * policy of large host buffers (src/cpu/host_memory.c).
 *
 *   bench_cold [--size-mib N] [--gap SECONDS] [--rounds N] [--warm N] [--folder DIR]
 *              [--caffe-peer PROGRAM --caffe-library-path DIRS] [--load-only]
 *
 * Every contender runs in a child process of its own, started after GAP seconds (default 3) in
 * which this program sleeps; the child does its work once (cold) and then WARM more times back to
 * back (default 4; the median is the warm figure), prints both and exits. Rounds (default 5)
 * take the contenders in a fresh order each (bench_round_order), so none always follows another;
 * figures are medians over rounds with min-max.
 *
 * Why a gap: on a virtual machine with free page reporting (virtio-balloon), memory the guest has
 * kept free for about two seconds in blocks of 2 MiB or more is handed back to the host, and the
 * next touch of it makes the host find and zero a page again. A benchmark that allocates back to
 * back in one process never meets that; a user starting a program after a pause always does.
 *
 * Contenders (SIZE, default 1024 MiB):
 * - load: cblob_model_open_file of a SIZE model of 16 layers from the page cache, with the library's
 *   default page policy, with CBLOB_HUGE_PAGES=1 (2 MiB pages always asked for) and =0 (never);
 *   against read(2) of the same file into fresh malloc memory, what any loader must at least do.
 * - fill: a fresh float32 blob of SIZE filled with cblob_blob_fill (its pages first touched by the
 *   fill's threads), under the three settings; against malloc + memset of as many bytes.
 * - reuse: a blob of SIZE filled once, then summed (cblob_blob_asum) WARM + 1 times: the time of
 *   a pass over memory already touched, where 2 MiB pages save TLB misses (cold: the first pass).
 *
 * With --caffe-peer, real Caffe's caffe::ReadProtoFromBinaryFile is a load contender too: PROGRAM
 * is tests/formats/caffe_peer.cpp built against Debian 11's libcaffe (bench/caffe_load.sh builds it
 * and passes the library path scripts/caffe-env.sh made). It parses the whole file into protobuf's
 * arrays, which Caffe's Net then copies into its blobs (not timed here). --load-only leaves out
 * the fill and reuse tables. */
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

static void die(const char *what)
{
    fprintf(stderr, "bench_cold: %s: %s\n", what, cblob_last_error_message());
    exit(1);
}

static void must(cblob_status status, const char *what)
{
    if (status != CBLOB_OK)
        die(what);
}

/* ---- children: one kind of work, once cold and then `warm` times -------------------------- */

static cblob_context *child_context(void)
{
    cblob_context *context = NULL;
    must(cblob_context_create(&context), "cblob_context_create");
    return context;
}

static double child_load(const char *path)
{
    static cblob_context *context;
    if (context == NULL)
        context = child_context();
    cblob_model *model = NULL;
    const double start = bench_now();
    must(cblob_model_open_file(context, path, &model), "cblob_model_open_file");
    const double took = bench_now() - start;
    cblob_model_destroy(model);
    return took;
}

static double child_read(const char *path)
{
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

static double child_fill(size_t bytes)
{
    static cblob_context *context;
    if (context == NULL)
        context = child_context();
    const int64_t count = (int64_t)(bytes / sizeof(float));
    cblob_blob *blob = NULL;
    const double start = bench_now();
    must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &count, &blob), "cblob_blob_create");
    must(cblob_blob_fill(blob, CBLOB_PART_DATA, 1.0), "cblob_blob_fill");
    const double took = bench_now() - start;
    cblob_blob_destroy(blob);
    return took;
}

static double child_memset(size_t bytes)
{
    const double start = bench_now();
    char *memory = malloc(bytes);
    if (memory == NULL)
        die("malloc");
    memset(memory, 1, bytes);
    const double took = bench_now() - start;
    volatile char sink = memory[bytes / 2];
    (void)sink;
    free(memory);
    return took;
}

/* One pass of asum over a blob filled once; the first call fills it. */
static double child_reuse(size_t bytes)
{
    static cblob_context *context;
    static cblob_blob *blob;
    if (blob == NULL) {
        context = child_context();
        const int64_t count = (int64_t)(bytes / sizeof(float));
        must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &count, &blob), "cblob_blob_create");
        must(cblob_blob_fill(blob, CBLOB_PART_DATA, 1.0), "cblob_blob_fill");
    }
    double sum = 0;
    const double start = bench_now();
    must(cblob_blob_asum(blob, CBLOB_PART_DATA, &sum), "cblob_blob_asum");
    return bench_now() - start;
}

static int child_main(const char *work, const char *argument, int warm)
{
    const size_t bytes = (size_t)atoll(argument) << 20;
    double (*run)(const char *) = NULL;
    double (*run_bytes)(size_t) = NULL;
    if (strcmp(work, "load") == 0)
        run = child_load;
    else if (strcmp(work, "read") == 0)
        run = child_read;
    else if (strcmp(work, "fill") == 0)
        run_bytes = child_fill;
    else if (strcmp(work, "memset") == 0)
        run_bytes = child_memset;
    else if (strcmp(work, "reuse") == 0)
        run_bytes = child_reuse;
    else
        return 2;
    double times[MAX_WARM + 1];
    for (int i = 0; i <= warm; ++i)
        times[i] = run != NULL ? run(argument) : run_bytes(bytes);
    bench_child_report(times, warm);
    return 0;
}

/* ---- the parent ------------------------------------------------------------------------------ */

static cblob_model *make_model(cblob_context *context, size_t bytes, int layers)
{
    cblob_model *model = NULL;
    must(cblob_model_create(context, CBLOB_NET_FORMAT_V2, "bench", &model), "cblob_model_create");
    const int64_t per_layer = (int64_t)(bytes / sizeof(float) / (size_t)layers);
    for (int i = 0; i < layers; ++i) {
        const int64_t dims[2] = {256, per_layer / 256}, bias_dims[1] = {256};
        cblob_blob *blobs[2] = {NULL, NULL};
        must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 2, dims, &blobs[0]), "cblob_blob_create");
        must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, bias_dims, &blobs[1]), "cblob_blob_create");
        must(cblob_blob_fill(blobs[0], CBLOB_PART_DATA, 0.25 + i), "cblob_blob_fill");
        char name[32];
        snprintf(name, sizeof name, "fc%d", i);
        must(cblob_model_add_layer(model, name, "InnerProduct", blobs, 2), "cblob_model_add_layer");
        cblob_blob_destroy(blobs[0]);
        cblob_blob_destroy(blobs[1]);
    }
    return model;
}

/* Written in a child, so that this process never holds the model's memory. */
static int child_write(const char *path, const char *mib)
{
    cblob_context *context = child_context();
    cblob_model *model = make_model(context, (size_t)atoll(mib) << 20, 16);
    must(cblob_model_to_proto_file(model, 0, path), "cblob_model_to_proto_file");
    cblob_model_destroy(model);
    cblob_context_destroy(context);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2], argv[3], atoi(argv[4]) < MAX_WARM ? atoi(argv[4]) : MAX_WARM);
    if (argc == 4 && strcmp(argv[1], "--write") == 0)
        return child_write(argv[2], argv[3]);
    int mib = 1024, rounds = 5, warm = 4;
    double gap = 3;
    const char *caffe_peer = NULL, *caffe_library_path = NULL;
    bool load_only = false;
    const char *folder = getenv("TMPDIR") != NULL && getenv("TMPDIR")[0] != '\0' ? getenv("TMPDIR") : "/tmp";
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
        else if (strcmp(argv[i], "--caffe-peer") == 0 && i + 1 < argc)
            caffe_peer = argv[++i];
        else if (strcmp(argv[i], "--caffe-library-path") == 0 && i + 1 < argc)
            caffe_library_path = argv[++i];
        else if (strcmp(argv[i], "--load-only") == 0)
            load_only = true;
        else {
            fprintf(stderr, "usage: bench_cold [--size-mib N] [--gap SECONDS] [--rounds N] [--warm N] [--folder DIR]\n"
                            "                  [--caffe-peer PROGRAM --caffe-library-path DIRS] [--load-only]\n");
            return 2;
        }
    }
    if (mib < 16 || warm < 0 || warm > MAX_WARM || gap < 0) {
        fprintf(stderr, "bench_cold: SIZE at least 16 MiB, 0 to %d warm repetitions\n",
                MAX_WARM);
        return 2;
    }
    char self[4096], path[4096], mib_text[32];
    const ssize_t self_length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (self_length <= 0)
        die("readlink /proc/self/exe");
    self[self_length] = '\0';
    snprintf(path, sizeof path, "%s/bench_cold_%ld.caffemodel", folder, (long)getpid());
    snprintf(mib_text, sizeof mib_text, "%d", mib);
    bench_print_machine("bench_cold");
    printf("cblob %s; %d MiB; %d rounds, each child after %.1f s idle; warm = median of %d more in the same process;\n"
           "ratio = the baseline's time / the contender's (above 1: faster than the baseline); GB/s = 1e9 bytes/s\n",
           cblob_version(), mib, rounds, gap, warm);
    char *write_argv[] = {self, "--write", path, mib_text, NULL};
    pid_t writer;
    int status = 0;
    if (posix_spawn(&writer, self, NULL, NULL, write_argv, environ) != 0 || waitpid(writer, &status, 0) != writer ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("writing the model");
    struct stat info;
    if (stat(path, &info) != 0)
        die(path);
    const double file_bytes = (double)info.st_size, bytes = (double)((size_t)mib << 20);

    char warm_text[16];
    snprintf(warm_text, sizeof warm_text, "%d", warm);
    const char *const read_argv[] = {self, "--child", "read", path, warm_text, NULL};
    const char *const load_argv[] = {self, "--child", "load", path, warm_text, NULL};
    const char *const memset_argv[] = {self, "--child", "memset", mib_text, warm_text, NULL};
    const char *const fill_argv[] = {self, "--child", "fill", mib_text, warm_text, NULL};
    const char *const reuse_argv[] = {self, "--child", "reuse", mib_text, warm_text, NULL};
    /* The default is the library's with CBLOB_HUGE_PAGES unset: an empty value is not "0" or "1". */
    const char *const policy[] = {"CBLOB_HUGE_PAGES=", NULL}, *const always[] = {"CBLOB_HUGE_PAGES=1", NULL},
                      *const never[] = {"CBLOB_HUGE_PAGES=0", NULL};
    char library_path[8192];
    snprintf(library_path, sizeof library_path, "LD_LIBRARY_PATH=%s", caffe_library_path != NULL ? caffe_library_path : "");
    const char *const caffe_argv[] = {caffe_peer, "bench", path, warm_text, NULL};
    const char *const caffe_env[] = {library_path, "GLOG_minloglevel=2", NULL};
    bench_child load[] = {
        {.label = "read(2) into fresh malloc memory", .argv = read_argv, .env = policy},
        {.label = "cblob_model_open_file, default", .argv = load_argv, .env = policy},
        {.label = "cblob_model_open_file, CBLOB_HUGE_PAGES=1", .argv = load_argv, .env = always},
        {.label = "cblob_model_open_file, CBLOB_HUGE_PAGES=0", .argv = load_argv, .env = never},
        {.label = "Caffe ReadProtoFromBinaryFile (Debian 11)", .argv = caffe_argv, .env = caffe_env},
    };
    bench_children("load: a 16-layer model from the page cache (ratio against read(2))", load, caffe_peer != NULL ? 5 : 4,
                   rounds, gap, file_bytes, 0);
    unlink(path);
    if (load_only)
        return 0;
    bench_child fill[] = {
        {.label = "malloc + memset", .argv = memset_argv, .env = policy},
        {.label = "blob create + fill, default", .argv = fill_argv, .env = policy},
        {.label = "blob create + fill, CBLOB_HUGE_PAGES=1", .argv = fill_argv, .env = always},
        {.label = "blob create + fill, CBLOB_HUGE_PAGES=0", .argv = fill_argv, .env = never},
    };
    bench_children("fill: fresh memory, first touched (ratio against malloc + memset)", fill, 4, rounds, gap, bytes, 0);
    bench_child reuse[] = {
        {.label = "asum of a filled blob, default", .argv = reuse_argv, .env = policy},
        {.label = "asum of a filled blob, CBLOB_HUGE_PAGES=1", .argv = reuse_argv, .env = always},
        {.label = "asum of a filled blob, CBLOB_HUGE_PAGES=0", .argv = reuse_argv, .env = never},
    };
    bench_children("reuse: passes over memory already touched (ratio against the default)", reuse, 3, rounds, gap, bytes,
                   0);
    return 0;
}
