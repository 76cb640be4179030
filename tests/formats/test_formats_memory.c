/* SPDX-License-Identifier: BSD-2-Clause */
/* Memory and reads of every reader and writer over files of hostile shapes (issue 24): the bounds
 * the header states, measured from outside. Each operation runs in a child process whose own peak
 * (wait4's ru_maxrss, as tests/tools/cli_support.c takes the program's) less its resident memory
 * just before the operation is what the operation cost:
 *
 *   opening   at most 1.6 x the file + 64 bytes per layer + 128 bytes per blob + 8 MiB,
 *   exporting at most 0.2 x the model + 128 bytes per tensor + 16 MiB more than the model,
 *
 * and a file that cannot be what it is opened as is refused after reading a few KiB of it.
 *
 * Sanitizers change every figure (redzones, quarantine, shadow memory): there the suite runs every
 * reader and writer over the same files and checks what they return and read, not their peaks (the
 * release preset checks those). Files are made at real scale (16 to 32 MiB), so that the per-item
 * terms, not the constant, decide. */
#define _GNU_SOURCE /* wait4 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "pb.h"
#include "support.h"

#if defined(__SANITIZE_ADDRESS__)
#define CB_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define CB_SANITIZED 1
#endif
#endif

#define MIB (1024.0 * 1024.0)

/* Whether peaks mean anything in this build; where they do not, files an eighth of the size do
 * (what is checked there is what the readers return, and the shapes matter, not the scale). */
#ifdef CB_SANITIZED
static const bool peaks_measured = false;
#define SCALED(n) ((n) / 8)
#else
static const bool peaks_measured = true;
#define SCALED(n) (n)
#endif

/* ---- measuring a child ------------------------------------------------------------------------ */

typedef bool (*operation)(cblob_context *context, const void *argument);

typedef struct cost {
    bool ok;             /* the child ran the operation, and it did what it should */
    double bytes;        /* peak less the resident memory before the operation */
    double before;       /* resident memory before it (bytes) */
    long long read;      /* bytes the operation read (rchar) */
    char message[512];   /* the library's message when it failed */
} cost;

static long long status_kib(const char *field)
{
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long long value = -1;
    while (status != NULL && fgets(line, sizeof line, status) != NULL)
        if (strncmp(line, field, strlen(field)) == 0)
            value = strtoll(line + strlen(field), NULL, 10);
    if (status != NULL)
        fclose(status);
    return value;
}

static long long bytes_read(void)
{
    FILE *io = fopen("/proc/self/io", "r");
    long long rchar = -1;
    if (io != NULL) {
        if (fscanf(io, "rchar: %lld", &rchar) != 1)
            rchar = -1;
        fclose(io);
    }
    return rchar;
}

typedef struct child_report {
    int ok;
    long long before_kib, peak_kib, read;
    char message[512];
} child_report;

/* The peak of a process that runs op and reports through `channel`, measured by its parent. */
static bool run_and_report(int channel, operation op, cblob_context *context, const void *argument)
{
    int inner[2];
    if (pipe(inner) != 0)
        return false;
    const pid_t child = fork();
    if (child == 0) {
        close(inner[0]);
        child_report report = {0};
        const long long start = bytes_read();
        report.ok = op(context, argument);
        report.read = bytes_read() - start;
        snprintf(report.message, sizeof report.message, "%s", cblob_last_error_message());
        _exit(write(inner[1], &report, sizeof report) == (ssize_t)sizeof report ? 0 : 2);
    }
    close(inner[1]);
    child_report report = {0};
    report.before_kib = status_kib("VmRSS:"); /* what the child starts with */
    const long long before = report.before_kib;
    const bool heard = read(inner[0], &report, sizeof report) == (ssize_t)sizeof report;
    close(inner[0]);
    int status = 0;
    struct rusage usage;
    if (child < 0 || wait4(child, &status, 0, &usage) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        !heard)
        return false;
    report.before_kib = before;
    report.peak_kib = usage.ru_maxrss;
    return write(channel, &report, sizeof report) == (ssize_t)sizeof report;
}

/* Runs op in a grandchild of this process, after `prepare` (may be NULL) in a child: what op cost
 * is the grandchild's own peak less the memory it started with (the child's, the prepared state:
 * ru_maxrss counts a process's whole life, so whatever prepare took is not op's). */
static cost measure(operation prepare, operation op, const void *argument)
{
    cost result = {0};
    int channel[2];
    if (pipe(channel) != 0)
        return result;
    const pid_t child = fork();
    if (child == 0) {
        close(channel[0]);
        cblob_context *context = NULL;
        bool ok = cblob_context_create(&context) == CBLOB_OK && (prepare == NULL || prepare(context, argument));
        if (!ok) {
            child_report report = {0};
            snprintf(report.message, sizeof report.message, "preparing: %s", cblob_last_error_message());
            ok = write(channel[1], &report, sizeof report) == (ssize_t)sizeof report;
        } else {
            ok = run_and_report(channel[1], op, context, argument);
        }
        _exit(ok ? 0 : 2);
    }
    close(channel[1]);
    child_report report = {0};
    const bool heard = read(channel[0], &report, sizeof report) == (ssize_t)sizeof report;
    close(channel[0]);
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !heard)
        return result;
    result.ok = report.ok;
    result.before = (double)report.before_kib * 1024;
    result.bytes = (double)(report.peak_kib - report.before_kib) * 1024;
    result.read = report.read;
    snprintf(result.message, sizeof result.message, "%s", report.message);
    return result;
}

/* ---- files of hostile shapes ------------------------------------------------------------------- */

static char folder[256];

static const char *path_of(const char *name)
{
    static char paths[8][512];
    static int next;
    char *path = paths[next++ % 8];
    snprintf(path, 512, "%s/%s", folder, name);
    return path;
}

static bool write_pb(const char *path, const pb *bytes)
{
    return ft_write_file(path, bytes->data, bytes->size);
}

static double file_size(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0 ? (double)info.st_size : -1;
}

/* Layers made of `layer` (a LayerParameter's bytes) repeated until the file holds `bytes`. */
static bool write_layers(const char *path, const pb *layer, size_t bytes, int64_t *count)
{
    pb net = {0}, one = {0};
    pb_message(&one, 100, layer);
    *count = 0;
    while (net.size + one.size <= bytes) {
        pb_raw(&net, one.data, one.size);
        ++*count;
    }
    const bool written = write_pb(path, &net);
    pb_free(&net), pb_free(&one);
    return written;
}

/* A BlobProto of shape [n] (no values when n is 0; n floats otherwise). */
static void blob_of(pb *blob, int64_t n)
{
    pb_shape(blob, (int64_t[]){n}, 1, true);
    if (n > 0) {
        float *values = calloc((size_t)n, sizeof *values);
        pb_floats(blob, 5, values, (size_t)n, true);
        free(values);
    }
}

/* ---- what each child does --------------------------------------------------------------------- */

typedef struct open_argument {
    const char *path;
    int how; /* 0 cblob_model_open_file, 1 _lazy, 2 cblob_file_open, 3 cblob_blob_vector_from_proto_file,
              * 4 cblob_model_open_safetensors_file, 5 cblob_model_open_npz_file */
    int64_t layers, blobs; /* what a successful open must hold */
} open_argument;

static bool open_counted(cblob_context *context, const void *argument)
{
    const open_argument *a = argument;
    cblob_model *model = NULL;
    cblob_file *file = NULL;
    int64_t layers = -1, blobs = 0;
    cblob_status status;
    switch (a->how) {
    case 0: status = cblob_model_open_file(context, a->path, &model); break;
    case 1: status = cblob_model_open_file_lazy(context, a->path, &model); break;
    case 2:
        status = cblob_file_open(context, a->path, 0, 0, &file);
        if (status == CBLOB_OK && cblob_file_model(file, &model) != CBLOB_OK) {
            status = cblob_file_num_blobs(file, &blobs);
            layers = 0;
            model = NULL;
        }
        break;
    case 3: status = cblob_blob_vector_from_proto_file(context, a->path, 0, NULL, &blobs), layers = 0; break;
    case 4: status = cblob_model_open_safetensors_file(context, a->path, &model); break;
    default: status = cblob_model_open_npz_file(context, a->path, &model); break;
    }
    if (status != CBLOB_OK)
        return false;
    if (model != NULL) {
        cblob_model_num_layers(model, &layers);
        for (int64_t i = 0; i < layers; ++i) {
            int64_t n = 0;
            cblob_model_layer_num_blobs(model, i, &n);
            blobs += n;
        }
    }
    return layers == a->layers && blobs == a->blobs; /* the child exits without freeing: the peak is taken */
}

/* The bound on opening a file, and a check against it for each opener given. */
static double open_bound(double file, int64_t layers, int64_t blobs)
{
    return 1.6 * file + 64.0 * (double)layers + 128.0 * (double)blobs + 8 * MIB;
}

#define CHECK_OPENS(path, layers, blobs, ...) \
    do { \
        const int hows_[] = {__VA_ARGS__}; \
        for (size_t h_ = 0; h_ < sizeof hows_ / sizeof hows_[0]; ++h_) { \
            const open_argument a_ = {(path), hows_[h_], (layers), (blobs)}; \
            const cost c_ = measure(NULL, open_counted, &a_); \
            const double file_ = file_size(path), bound_ = open_bound(file_, (layers), (blobs)); \
            printf("%-28s opener %d: %.1f MiB file, %" PRId64 " layers, %" PRId64 " blobs: %.1f MiB (%.2fx), " \
                   "bound %.1f MiB\n", strrchr(path, '/') + 1, hows_[h_], file_ / MIB, (int64_t)(layers), \
                   (int64_t)(blobs), c_.bytes / MIB, c_.bytes / file_, bound_ / MIB); \
            CHECK_MSG(c_.ok, "opener %d failed on %s: %s", hows_[h_], path, c_.message); \
            CHECK_MSG(!peaks_measured || c_.bytes <= bound_, "opener %d took %.1f MiB for %s, over its bound of " \
                      "%.1f MiB", hows_[h_], c_.bytes / MIB, path, bound_ / MIB); \
        } \
    } while (0)

static void begin(void)
{
    if (!ft_temp_folder(folder, sizeof folder))
        SKIP("no temporary folder");
}

/* ---- the nets ----------------------------------------------------------------------------------- */

/* 16 MiB of empty 3-byte layers: 5.6 million layers (7.3x the file in 1.1). */
TEST(a_net_of_empty_layers_opens_within_its_bound)
{
    begin();
    const pb empty = {0};
    int64_t layers = 0;
    CHECK(write_layers(path_of("empty_layers.caffemodel"), &empty, SCALED(16 << 20), &layers));
    CHECK_OPENS(path_of("empty_layers.caffemodel"), layers, 0, 0, 1, 2);
    ft_remove_folder(folder);
}

/* Layers of 64 blobs of shape [0] each (3.6x in 1.1), and layers of one such blob (4.1x). */
TEST(nets_of_empty_blobs_open_within_their_bound)
{
    begin();
    pb blob = {0}, layer = {0}, single = {0};
    blob_of(&blob, 0);
    for (int i = 0; i < 64; ++i)
        pb_message(&layer, 7, &blob);
    pb_message(&single, 7, &blob);
    int64_t layers = 0, singles = 0;
    CHECK(write_layers(path_of("empty_blobs.caffemodel"), &layer, SCALED(16 << 20), &layers));
    CHECK(write_layers(path_of("one_empty_blob.caffemodel"), &single, SCALED(16 << 20), &singles));
    CHECK_OPENS(path_of("empty_blobs.caffemodel"), layers, 64 * layers, 0, 1, 2);
    CHECK_OPENS(path_of("one_empty_blob.caffemodel"), singles, singles, 0, 1, 2);
    pb_free(&blob), pb_free(&layer), pb_free(&single);
    ft_remove_folder(folder);
}

/* One layer of 32 MiB of fields no reader looks into (a fork's), one layer named with 32 MiB, and
 * one blob of 6 million unpacked floats: read, kept, and never held twice (2x in 1.1). */
TEST(huge_fields_are_not_held_twice)
{
    begin();
    pb unknown = {0}, named = {0}, unpacked = {0}, blob = {0}, net = {0};
    pb_string(&unknown, 1, "fork");
    const size_t huge = SCALED(32u << 20);
    while (unknown.size < huge)
        pb_int(&unknown, 999, 1);
    char *name = malloc(huge);
    CHECK(name != NULL);
    memset(name, 'n', huge);
    pb_bytes(&named, 1, name, huge);
    free(name);
    pb_shape(&blob, (int64_t[]){SCALED(6 << 20)}, 1, true);
    const float value = 0.5f;
    for (int i = 0; i < SCALED(6 << 20); ++i)
        pb_floats(&blob, 5, &value, 1, false);
    pb_message(&unpacked, 7, &blob);
    int64_t count = 0;
    CHECK(write_layers(path_of("unknown_fields.caffemodel"), &unknown, unknown.size + 8, &count) && count == 1);
    CHECK(write_layers(path_of("huge_name.caffemodel"), &named, named.size + 8, &count) && count == 1);
    CHECK(write_layers(path_of("unpacked.caffemodel"), &unpacked, unpacked.size + 8, &count) && count == 1);
    CHECK_OPENS(path_of("unknown_fields.caffemodel"), 1, 0, 0, 1, 2);
    CHECK_OPENS(path_of("huge_name.caffemodel"), 1, 0, 0, 1, 2);
    CHECK_OPENS(path_of("unpacked.caffemodel"), 1, 1, 0, 1, 2);
    pb_free(&unknown), pb_free(&named), pb_free(&unpacked), pb_free(&blob), pb_free(&net);
    ft_remove_folder(folder);
}

/* A BlobProtoVector of 1.6 million one-value blobs, through both of its readers. */
TEST(a_vector_of_tiny_blobs_opens_within_its_bound)
{
    begin();
    pb blob = {0}, vector = {0};
    blob_of(&blob, 1);
    int64_t blobs = 0;
    for (; vector.size + blob.size + 2 <= SCALED(16u << 20); ++blobs)
        pb_message(&vector, 1, &blob);
    CHECK(write_pb(path_of("vector.binaryproto"), &vector));
    CHECK_OPENS(path_of("vector.binaryproto"), 0, blobs, 2, 3);
    pb_free(&blob), pb_free(&vector);
    ft_remove_folder(folder);
}

/* ---- safetensors and npz ---------------------------------------------------------------------- */

/* A safetensors file of `count` tensors "l<i>.0" of shape [n] (float32). */
static bool write_safetensors(const char *path, int64_t count, int64_t n)
{
    pb header = {0};
    char entry[160];
    pb_raw(&header, "{", 1);
    for (int64_t i = 0; i < count; ++i) {
        const int length = snprintf(entry, sizeof entry, "%s\"l%" PRId64 ".0\":{\"dtype\":\"F32\",\"shape\":[%" PRId64
                                    "],\"data_offsets\":[%" PRId64 ",%" PRId64 "]}",
                                    i > 0 ? "," : "", i, n, 4 * n * i, 4 * n * (i + 1));
        pb_raw(&header, entry, (size_t)length);
    }
    pb_raw(&header, "}", 1);
    while (header.size % 8 != 0)
        pb_raw(&header, " ", 1);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i)
        length[i] = (uint8_t)((uint64_t)header.size >> (8 * i));
    pb file = {0};
    pb_raw(&file, length, 8);
    pb_raw(&file, header.data, header.size);
    float *values = calloc((size_t)(count * n) + 1, sizeof *values);
    pb_raw(&file, values, (size_t)(count * n) * sizeof *values);
    free(values);
    const bool written = write_pb(path, &file);
    pb_free(&header), pb_free(&file);
    return written;
}

/* 200,000 one-element tensors (a 13 MB file took 457 MB in 1.1), 180,000 empty ones (26x). */
TEST(safetensors_of_tiny_tensors_open_within_their_bound)
{
    begin();
    const int64_t ones = SCALED(200000), empties = SCALED(180000);
    CHECK(write_safetensors(path_of("one_element.safetensors"), ones, 1));
    CHECK(write_safetensors(path_of("empty.safetensors"), empties, 0));
    CHECK_OPENS(path_of("one_element.safetensors"), ones, ones, 2, 4);
    CHECK_OPENS(path_of("empty.safetensors"), empties, empties, 2, 4);
    ft_remove_folder(folder);
}

/* 20,000 empty members written by numpy.savez (10x in 1.1). */
TEST(npz_of_empty_members_opens_within_its_bound)
{
    begin();
    char command[1024];
    snprintf(command, sizeof command,
             "%s -c 'import numpy as np, sys; np.savez(sys.argv[1], **{\"l%%d/0\" %% i: np.zeros((0,), np.float32) "
             "for i in range(20000)})' %s 2>/dev/null",
             CBLOB_PYTHON, path_of("empty.npz"));
    if (system(command) != 0)
        SKIP("NumPy is not installed for " CBLOB_PYTHON " (scripts/setup.sh installs it)");
    CHECK_OPENS(path_of("empty.npz"), 20000, 20000, 2, 5);
    ft_remove_folder(folder);
}

/* ---- exports ------------------------------------------------------------------------------------- */

typedef struct export_argument {
    const char *from, *to;
    int how; /* 0 safetensors, 1 npz, 2 caffemodel */
} export_argument;

static cblob_model *opened;

static bool open_model(cblob_context *context, const void *argument)
{
    const export_argument *a = argument;
    return cblob_model_open_file(context, a->from, &opened) == CBLOB_OK;
}

static bool export_model(cblob_context *context, const void *argument)
{
    (void)context;
    const export_argument *a = argument;
    switch (a->how) {
    case 0: return cblob_model_to_safetensors_file(opened, CBLOB_EXPORT_DIFF, a->to) == CBLOB_OK;
    case 1: return cblob_model_to_npz_file(opened, CBLOB_EXPORT_DIFF, a->to) == CBLOB_OK;
    default: return cblob_model_to_proto_file(opened, 1, a->to) == CBLOB_OK;
    }
}

/* 1 million one-value blobs in 100,000 layers, exported to each format: 7x to 175x in 1.1. */
TEST(exports_of_tiny_blobs_stay_within_their_bound)
{
    begin();
    pb blob = {0}, layer = {0};
    blob_of(&blob, 1);
    pb_string(&layer, 1, "tiny");
    for (int i = 0; i < 10; ++i)
        pb_message(&layer, 7, &blob);
    pb net = {0};
    const int layers = SCALED(100000), blobs = 10 * layers;
    for (int i = 0; i < layers; ++i) {
        pb_message(&net, 100, &layer);
        /* Names repeat ("tiny"): keys take the layer's index, `tiny@<i>`. */
    }
    CHECK(write_pb(path_of("tiny_blobs.caffemodel"), &net));
    static const char *const names[] = {"tiny.safetensors", "tiny.npz", "tiny_back.caffemodel"};
    /* The model's own memory: what the open left resident, less what a process has before it. */
    const open_argument counted = {path_of("tiny_blobs.caffemodel"), 0, layers, blobs};
    const cost bare = measure(NULL, open_counted, &counted);
    CHECK_MSG(bare.ok, "%s", bare.message);
    for (int how = 0; how < 3; ++how) {
        const export_argument a = {path_of("tiny_blobs.caffemodel"), path_of(names[how]), how};
        const cost c = measure(open_model, export_model, &a);
        const double model = c.before - bare.before;
        const double bound = 0.2 * model + 128.0 * blobs + 16 * MIB;
        printf("export %-22s of a %.1f MiB model of %d blobs: %.1f MiB more (%.2fx the model), bound %.1f MiB\n",
               names[how], model / MIB, blobs, c.bytes / MIB, c.bytes / model, bound / MIB);
        CHECK_MSG(c.ok, "%s: %s", names[how], c.message);
        CHECK_MSG(!peaks_measured || c.bytes <= bound,
                  "the export to %s took %.1f MiB more than the model, over its bound of %.1f MiB",
                  names[how], c.bytes / MIB, bound / MIB);
    }
    pb_free(&blob), pb_free(&layer), pb_free(&net);
    ft_remove_folder(folder);
}

/* ---- refusing after the first bytes --------------------------------------------------------------- */

typedef struct refusal_argument {
    const char *path;
    int how;
} refusal_argument;

static bool refused(cblob_context *context, const void *argument)
{
    const refusal_argument *a = argument;
    cblob_model *model = NULL;
    cblob_blob *blob = NULL;
    cblob_file *file = NULL;
    cblob_proto_kind proto = CBLOB_PROTO_NET;
    cblob_file_kind kind = CBLOB_FILE_NET;
    int64_t count = 0;
    cblob_status status;
    switch (a->how) {
    case 0: status = cblob_model_open_file(context, a->path, &model); break;
    case 1: status = cblob_model_open_file_lazy(context, a->path, &model); break;
    case 2: status = cblob_file_open(context, a->path, 0, 0, &file); break;
    case 3: status = cblob_file_open(context, a->path, CBLOB_OPEN_LAZY, 0, &file); break;
    case 4: status = cblob_blob_create_from_proto_file(context, a->path, &blob); break;
    case 5: {
        cblob_blob *into = NULL;
        status = cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){1}, &into);
        if (status == CBLOB_OK)
            status = cblob_blob_from_proto_file(into, a->path, 1);
        cblob_blob_destroy(into);
        break;
    }
    case 6: status = cblob_blob_vector_from_proto_file(context, a->path, 0, NULL, &count); break;
    case 7: status = cblob_proto_detect_file(a->path, &proto); break;
    case 8: status = cblob_file_detect(a->path, &kind); break;
    case 9: status = cblob_model_open_npz_file(context, a->path, &model); break;
    default: status = cblob_model_open_safetensors_file(context, a->path, &model); break;
    }
    return status == CBLOB_ERR_PARSE;
}

/* A 1 GiB file of zeros (sparse: it takes no disk) is no Caffe message nor anything else cblob
 * reads: every opener refuses it having read a few KiB, in a few MiB of memory (1.1 read it whole,
 * 1.05 GB of memory and 2 s for "field number 0 at byte 0"). */
TEST(a_gibibyte_of_zeros_is_refused_after_its_first_kibibytes)
{
    begin();
    const char *path = path_of("zeros.caffemodel");
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, (off_t)1 << 30) == 0);
    close(fd);
    for (int how = 0; how <= 10; ++how) {
        const refusal_argument a = {path, how};
        const cost c = measure(NULL, refused, &a);
        printf("opener %2d: refused after reading %lld bytes, %.1f MiB of memory\n", how, c.read, c.bytes / MIB);
        CHECK_MSG(c.ok, "opener %d did not refuse the zeros as malformed: %s", how, c.message);
        CHECK_MSG(c.read <= (16 << 10), "opener %d read %lld bytes of zeros before refusing them", how, c.read);
        CHECK_MSG(!peaks_measured || c.bytes <= 8 * MIB, "opener %d took %.1f MiB to refuse them", how, c.bytes / MIB);
    }
    ft_remove_folder(folder);
}
