/* SPDX-License-Identifier: BSD-2-Clause */
/* A context's progress callback (cblob_context_set_progress, ABI 1.2; issue 30): every call that
 * reads or writes a file tells it how far it is, from 0 to its total, in steps of about a MiB, and
 * a stop asked at any of those calls (the last one before a write's output takes its place
 * included) fails with CBLOB_ERR_CANCELLED and changes nothing: an existing file keeps its bytes,
 * an existing .npy folder every file, a missing output stays missing, no temporary is left, and a
 * reader hands nothing out. A blocking read that a signal interrupts asks at once; a writer killed
 * mid-way leaves a staging folder that the next writer removes. */
#define _GNU_SOURCE /* pipe2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "io_support.h"

/* ---- a callback that records its calls and may stop one ----------------------------------- */

#define MAX_CALLS 4096

typedef struct recorder {
    int64_t done[MAX_CALLS], total[MAX_CALLS];
    int calls;
    int stop_at; /* the call that answers stop; -1: none */
    int kill_at; /* the call at which the process kills itself (a writer killed mid-way); -1: none */
} recorder;

static int32_t record_call(void *user_data, int64_t done, int64_t total)
{
    recorder *r = user_data;
    const int call = r->calls;
    if (call < MAX_CALLS) {
        r->done[call] = done;
        r->total[call] = total;
    }
    ++r->calls;
    if (call == r->kill_at)
        raise(SIGKILL);
    return call == r->stop_at;
}

static void recorder_reset(recorder *r, int stop_at)
{
    memset(r, 0, sizeof *r);
    r->stop_at = stop_at;
    r->kill_at = -1;
}

/* What every sequence of calls satisfies: done from 0 up, never past total, the last one done ==
 * total (expected_total when it is not -1); at least min_calls calls. */
static bool sequence_ok(const recorder *r, int64_t expected_total, int min_calls)
{
    bool ok = r->calls >= min_calls && r->calls <= MAX_CALLS && r->done[0] == 0;
    for (int i = 1; ok && i < r->calls; ++i)
        ok = r->done[i] >= r->done[i - 1] && (r->total[i] < 0 || r->done[i] <= r->total[i]);
    const int last = r->calls - 1;
    ok = ok && r->done[last] == r->total[last] && (expected_total < 0 || r->total[last] == expected_total);
    if (!ok) {
        fprintf(stderr, "%d calls (expected total %lld):", r->calls, (long long)expected_total);
        for (int i = 0; i < r->calls && i < MAX_CALLS; ++i)
            fprintf(stderr, " %lld/%lld", (long long)r->done[i], (long long)r->total[i]);
        fputc('\n', stderr);
    }
    return ok;
}

/* ---- the model the calls work on ---------------------------------------------------------------- */

/* About 5 MiB of values over four layers (one without blobs, one float64 blob with a diff): writes
 * and reads of it take several steps. */
typedef struct fixture {
    char folder[512];
    cblob_context *context;
    cblob_model *model;
    cblob_blob *big;      /* layer a's blob */
    cblob_blob *pair[2];  /* layer b's blobs */
    cblob_blob *vector[2]; /* the blobs of a vector: big and pair[1] */
    recorder calls;
} fixture;

static cblob_blob *make_blob(cblob_context *context, cblob_dtype dtype, int64_t count, bool diff)
{
    cblob_blob *blob = NULL;
    if (cblob_blob_create(context, dtype, 1, &count, &blob) != CBLOB_OK)
        return NULL;
    for (int part = 0; part <= (diff ? 1 : 0); ++part) {
        void *values = NULL;
        if (cblob_blob_mutable_cpu_ptr(blob, (cblob_part)part, &values) != CBLOB_OK)
            return NULL;
        for (int64_t i = 0; i < count; ++i) {
            if (dtype == CBLOB_DTYPE_FLOAT64)
                ((double *)values)[i] = (double)(i % 1000) * 0.5 + part;
            else
                ((float *)values)[i] = (float)(i % 777) * 0.25f - (float)part;
        }
    }
    return blob;
}

static bool fixture_make(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    recorder_reset(&fx->calls, -1);
    if (!io_temp_folder(fx->folder, sizeof fx->folder) || cblob_context_create(&fx->context) != CBLOB_OK ||
        cblob_model_create(fx->context, CBLOB_NET_FORMAT_V2, "progress", &fx->model) != CBLOB_OK)
        return false;
    cblob_blob *a = make_blob(fx->context, CBLOB_DTYPE_FLOAT32, 700000, false);
    cblob_blob *b[2] = {make_blob(fx->context, CBLOB_DTYPE_FLOAT32, 100000, false),
                        make_blob(fx->context, CBLOB_DTYPE_FLOAT32, 17, false)};
    cblob_blob *d = make_blob(fx->context, CBLOB_DTYPE_FLOAT64, 100000, true);
    bool ok = a != NULL && b[0] != NULL && b[1] != NULL && d != NULL &&
              cblob_model_add_layer(fx->model, "a", "InnerProduct", &a, 1) == CBLOB_OK &&
              cblob_model_add_layer(fx->model, "b", "Convolution", b, 2) == CBLOB_OK &&
              cblob_model_add_layer(fx->model, "c", "ReLU", NULL, 0) == CBLOB_OK &&
              cblob_model_add_layer(fx->model, "d", "InnerProduct", &d, 1) == CBLOB_OK;
    cblob_blob_destroy(d);
    ok = ok && cblob_model_layer_blob(fx->model, 0, 0, &fx->big) == CBLOB_OK &&
         cblob_model_layer_blob(fx->model, 1, 0, &fx->pair[0]) == CBLOB_OK &&
         cblob_model_layer_blob(fx->model, 1, 1, &fx->pair[1]) == CBLOB_OK;
    fx->pair[1] = ok ? fx->pair[1] : NULL;
    fx->vector[0] = fx->big;
    fx->vector[1] = fx->pair[1];
    cblob_blob_destroy(a);
    cblob_blob_destroy(b[0]);
    cblob_blob_destroy(b[1]);
    return ok && cblob_context_set_progress(fx->context, record_call, &fx->calls) == CBLOB_OK;
}

static void fixture_free(fixture *fx)
{
    cblob_blob_destroy(fx->big);
    cblob_blob_destroy(fx->pair[0]);
    cblob_blob_destroy(fx->pair[1]);
    cblob_model_destroy(fx->model);
    cblob_context_destroy(fx->context);
    io_remove_tree(fx->folder);
}

/* ---- the writers ---------------------------------------------------------------------------- */

typedef struct writer {
    const char *name, *output;
    bool folder; /* writes a .npy folder */
    cblob_status (*write)(fixture *fx, const char *path);
} writer;

static cblob_status write_proto(fixture *fx, const char *path)
{
    return cblob_model_to_proto_file(fx->model, 1, path);
}
static cblob_status write_npz(fixture *fx, const char *path)
{
    return cblob_model_to_npz_file(fx->model, CBLOB_EXPORT_DIFF, path);
}
static cblob_status write_safetensors(fixture *fx, const char *path)
{
    return cblob_model_to_safetensors_file(fx->model, CBLOB_EXPORT_DIFF, path);
}
static cblob_status write_blob_proto(fixture *fx, const char *path)
{
    return cblob_blob_to_proto_file(fx->big, 0, path);
}
static cblob_status write_vector(fixture *fx, const char *path)
{
    return cblob_blob_vector_to_proto_file(fx->vector, 2, 0, path);
}
static cblob_status write_npy(fixture *fx, const char *path)
{
    return cblob_blob_to_npy_file(fx->big, CBLOB_PART_DATA, path);
}
static cblob_status write_folder(fixture *fx, const char *path)
{
    int64_t files = 0;
    return cblob_model_to_npy_folder(fx->model, CBLOB_EXPORT_DIFF, path, &files);
}
/* A file of blobs (a BlobProtoVector) as a folder, through cblob_file_to_npy_folder. */
static cblob_status write_file_folder(fixture *fx, const char *path)
{
    const char *vector = io_path(7, fx->folder, "pair.vector");
    cblob_status status = cblob_context_set_progress(fx->context, NULL, NULL);
    cblob_file *file = NULL;
    if (status == CBLOB_OK)
        status = cblob_blob_vector_to_proto_file(fx->vector, 2, 0, vector);
    if (status == CBLOB_OK)
        status = cblob_file_open(fx->context, vector, 0, 0, &file);
    if (status == CBLOB_OK)
        status = cblob_context_set_progress(fx->context, record_call, &fx->calls);
    int64_t files = 0;
    if (status == CBLOB_OK)
        status = cblob_file_to_npy_folder(file, 0, path, &files);
    cblob_file_destroy(file);
    return status;
}

static const writer writers[] = {
    {"caffemodel", "out.caffemodel", false, write_proto},
    {"npz", "out.npz", false, write_npz},
    {"safetensors", "out.safetensors", false, write_safetensors},
    {"binaryproto", "out.binaryproto", false, write_blob_proto},
    {"blob vector", "out.vector", false, write_vector},
    {"npy", "out.npy", false, write_npy},
    {"npy folder", "npy", true, write_folder},
    {"npy folder of a file", "npy_blobs", true, write_file_folder},
};
#define NUM_WRITERS (sizeof writers / sizeof writers[0])

/* The bytes of a file, or the sum of a folder's .npy files' (what a folder write reports). */
static int64_t written_size(const char *path, bool folder)
{
    struct stat info;
    if (!folder)
        return stat(path, &info) == 0 ? (int64_t)info.st_size : -1;
    DIR *dir = opendir(path);
    int64_t total = 0;
    const struct dirent *entry;
    while (dir != NULL && (entry = readdir(dir)) != NULL) {
        const size_t length = strlen(entry->d_name);
        if (length > 4 && strcmp(entry->d_name + length - 4, ".npy") == 0 &&
            fstatat(dirfd(dir), entry->d_name, &info, 0) == 0)
            total += (int64_t)info.st_size;
    }
    if (dir != NULL)
        closedir(dir);
    return dir != NULL ? total : -1;
}

/* Everything a folder holds (names, kinds and bytes, in name order), to compare before and after. */
static char *folder_image(const char *path, size_t *size)
{
    struct dirent **entries = NULL;
    const int count = scandir(path, &entries, NULL, alphasort);
    char *image = NULL;
    size_t used = 0;
    FILE *out = open_memstream(&image, &used);
    for (int i = 0; i < count; ++i) {
        char file[1024];
        snprintf(file, sizeof file, "%s/%s", path, entries[i]->d_name);
        struct stat info;
        fprintf(out, "%s|", entries[i]->d_name);
        if (lstat(file, &info) == 0 && S_ISREG(info.st_mode)) {
            FILE *in = fopen(file, "rb");
            int c;
            while (in != NULL && (c = fgetc(in)) != EOF)
                fputc(c, out);
            if (in != NULL)
                fclose(in);
        } else if (lstat(file, &info) == 0) {
            fprintf(out, "mode %o", (unsigned)info.st_mode);
        }
        fputc('\n', out);
        free(entries[i]);
    }
    free(entries);
    fclose(out);
    *size = used;
    return image;
}

TEST(every_writer_reports_from_zero_to_its_size)
{
    fixture fx;
    CHECK(fixture_make(&fx));
    for (size_t w = 0; w < NUM_WRITERS; ++w) {
        const char *path = io_path(0, fx.folder, writers[w].output);
        io_remove_tree(path);
        recorder_reset(&fx.calls, -1);
        CHECK_OK(writers[w].write(&fx, path));
        const int64_t size = written_size(path, writers[w].folder);
        /* Large outputs come in steps: the 2.8 MiB blob alone takes three. */
        CHECK_MSG(sequence_ok(&fx.calls, size, 3), "%s", writers[w].name);
        /* The total is known from the first call on (the .npz's zip records included). */
        CHECK_MSG(fx.calls.total[0] == size, "%s: first total %lld, wrote %lld", writers[w].name,
                  (long long)fx.calls.total[0], (long long)size);
        for (int i = 1; i + 1 < fx.calls.calls; ++i)
            CHECK_MSG(fx.calls.done[i] - fx.calls.done[i - 1] < (2 << 20),
                      "%s: a step of %lld bytes", writers[w].name, (long long)(fx.calls.done[i] - fx.calls.done[i - 1]));
        CHECK_EQ_INT(io_count_temporaries(fx.folder), 0);
        if (writers[w].folder)
            CHECK_EQ_INT(io_count_temporaries(path), 0);
    }
    /* Without a callback nothing is called. */
    CHECK_OK(cblob_context_set_progress(fx.context, NULL, NULL));
    recorder_reset(&fx.calls, -1);
    CHECK_OK(write_npz(&fx, io_path(0, fx.folder, "quiet.npz")));
    CHECK_EQ_INT(fx.calls.calls, 0);
    fixture_free(&fx);
}

/* The calls a writer makes, counted on a write of its own. */
static int calls_of(fixture *fx, const writer *w, const char *path)
{
    io_remove_tree(path);
    recorder_reset(&fx->calls, -1);
    const int calls = w->write(fx, path) == CBLOB_OK ? fx->calls.calls : -1;
    io_remove_tree(path);
    return calls;
}

TEST(a_stop_at_any_call_changes_nothing)
{
    fixture fx;
    CHECK(fixture_make(&fx));
    for (size_t w = 0; w < NUM_WRITERS; ++w) {
        const char *path = io_path(0, fx.folder, writers[w].output);
        const int calls = calls_of(&fx, &writers[w], path);
        CHECK_MSG(calls >= 3, "%s: %d calls", writers[w].name, calls);
        /* The first call (the total just known), the second, one mid-way, and the last two (the
         * last: every byte written, just before the output takes its place). */
        const int stops[5] = {0, 1, calls / 2, calls - 2, calls - 1};
        for (int existing = 0; existing < 2; ++existing) {
            for (int s = 0; s < 5; ++s) {
                const int stop = stops[s];
                /* An earlier output: a file of other bytes, or a folder of an earlier conversion. */
                io_remove_tree(path);
                if (existing && writers[w].folder) {
                    int64_t files = 0;
                    CHECK_OK(cblob_model_to_npy_folder(fx.model, 0, path, &files));
                    CHECK(io_write_file(io_path(1, path, "mine.txt"), "mine", 4));
                } else if (existing) {
                    CHECK(io_write_file(path, "old bytes", 9));
                }
                size_t before_size = 0, inner_size = 0, after_size = 0;
                char *before = existing ? folder_image(fx.folder, &before_size) : NULL;
                char *before_inner = existing && writers[w].folder ? folder_image(path, &inner_size) : NULL;
                recorder_reset(&fx.calls, stop);
                CHECK_ERROR(writers[w].write(&fx, path), CBLOB_ERR_CANCELLED);
                CHECK_MSG(strstr(cblob_last_error_message(), "stopped") != NULL, "%s", cblob_last_error_message());
                CHECK_MSG(fx.calls.calls == stop + 1, "%s: called %d times after a stop at call %d", writers[w].name,
                          fx.calls.calls, stop);
                struct stat info;
                if (!existing) {
                    CHECK_MSG(lstat(path, &info) != 0 && errno == ENOENT, "%s: stopped at %d of %d, left %s",
                              writers[w].name, stop, calls, path);
                } else if (writers[w].folder) {
                    char *after = folder_image(path, &after_size);
                    CHECK_MSG(after_size == inner_size && memcmp(after, before_inner, after_size) == 0,
                              "%s: stopped at %d of %d, the folder changed", writers[w].name, stop, calls);
                    free(after);
                } else {
                    CHECK_MSG(io_file_holds(path, "old bytes", 9), "%s: stopped at %d of %d, the file changed",
                              writers[w].name, stop, calls);
                }
                if (before != NULL) {
                    char *after = folder_image(fx.folder, &after_size);
                    CHECK_MSG((after_size == before_size && memcmp(after, before, after_size) == 0) || writers[w].folder,
                              "%s: the test folder changed", writers[w].name);
                    free(after);
                }
                CHECK_EQ_INT(io_count_temporaries(fx.folder), 0);
                if (existing && writers[w].folder)
                    CHECK_EQ_INT(io_count_temporaries(path), 0);
                free(before);
                free(before_inner);
            }
        }
    }
    fixture_free(&fx);
}

/* ---- the readers ------------------------------------------------------------------------------ */

typedef struct reader {
    const char *name, *input;
    cblob_status (*read)(fixture *fx, const char *path, void **out); /* *out: what it made, or NULL */
    void (*release)(void *made);
} reader;

static void release_file(void *made)
{
    cblob_file_destroy(made);
}
static void release_model(void *made)
{
    cblob_model_destroy(made);
}
static void release_blob(void *made)
{
    cblob_blob_destroy(made);
}

static cblob_status open_any(fixture *fx, const char *path, void **out)
{
    return cblob_file_open(fx->context, path, 0, 0, (cblob_file **)out);
}
static cblob_status open_model(fixture *fx, const char *path, void **out)
{
    return cblob_model_open_file(fx->context, path, (cblob_model **)out);
}
static cblob_status open_npz(fixture *fx, const char *path, void **out)
{
    return cblob_model_open_npz_file(fx->context, path, (cblob_model **)out);
}
static cblob_status open_safetensors(fixture *fx, const char *path, void **out)
{
    return cblob_model_open_safetensors_file(fx->context, path, (cblob_model **)out);
}
static cblob_status open_blob(fixture *fx, const char *path, void **out)
{
    return cblob_blob_create_from_proto_file(fx->context, path, (cblob_blob **)out);
}

static const reader readers[] = {
    {"cblob_file_open of a net", "out.caffemodel", open_any, release_file},
    {"cblob_file_open of an npz", "out.npz", open_any, release_file},
    {"cblob_file_open of a safetensors file", "out.safetensors", open_any, release_file},
    {"cblob_file_open of a .npy folder", "npy", open_any, release_file},
    {"cblob_file_open of a .npy file", "out.npy", open_any, release_file},
    {"cblob_model_open_file", "out.caffemodel", open_model, release_model},
    {"cblob_model_open_npz_file", "out.npz", open_npz, release_model},
    {"cblob_model_open_safetensors_file", "out.safetensors", open_safetensors, release_model},
    {"cblob_blob_create_from_proto_file", "out.binaryproto", open_blob, release_blob},
};
#define NUM_READERS (sizeof readers / sizeof readers[0])

/* Writes every writer's output into the fixture's folder (without telling anyone). */
static bool write_inputs(fixture *fx)
{
    bool ok = cblob_context_set_progress(fx->context, NULL, NULL) == CBLOB_OK;
    for (size_t w = 0; ok && w < NUM_WRITERS; ++w)
        ok = writers[w].write(fx, io_path(0, fx->folder, writers[w].output)) == CBLOB_OK;
    return ok && cblob_context_set_progress(fx->context, record_call, &fx->calls) == CBLOB_OK;
}

TEST(every_reader_reports_and_a_stop_opens_nothing)
{
    fixture fx;
    CHECK(fixture_make(&fx));
    CHECK(write_inputs(&fx));
    for (size_t r = 0; r < NUM_READERS; ++r) {
        const char *path = io_path(0, fx.folder, readers[r].input);
        recorder_reset(&fx.calls, -1);
        void *made = NULL;
        CHECK_OK(readers[r].read(&fx, path, &made));
        readers[r].release(made);
        const int calls = fx.calls.calls;
        CHECK_MSG(sequence_ok(&fx.calls, -1, 3), "%s", readers[r].name);
        for (int stop = 0; stop < calls; ++stop) {
            recorder_reset(&fx.calls, stop);
            void *untouched = (void *)&fx;
            CHECK_ERROR(readers[r].read(&fx, path, &untouched), CBLOB_ERR_CANCELLED);
            CHECK_MSG(untouched == (void *)&fx, "%s: an out-parameter was written", readers[r].name);
            CHECK_EQ_INT(fx.calls.calls, stop + 1);
        }
    }
    /* A blob read into keeps its shape and values when stopped. */
    cblob_blob *blob = make_blob(fx.context, CBLOB_DTYPE_FLOAT32, 5, false);
    CHECK(blob != NULL);
    recorder_reset(&fx.calls, 1);
    CHECK_ERROR(cblob_blob_from_proto_file(blob, io_path(0, fx.folder, "out.binaryproto"), 1), CBLOB_ERR_CANCELLED);
    int64_t count = 0;
    const float *values = NULL;
    CHECK_OK(cblob_blob_count(blob, &count));
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&values));
    CHECK(count == 5 && values[1] == 0.25f);
    cblob_blob_destroy(blob);
    recorder_reset(&fx.calls, 0);
    cblob_blob *vector[2] = {NULL, NULL};
    int64_t num = -7;
    CHECK_ERROR(cblob_blob_vector_from_proto_file(fx.context, io_path(0, fx.folder, "out.vector"), 2, vector, &num),
                CBLOB_ERR_CANCELLED);
    CHECK(num == -7 && vector[0] == NULL);
    fixture_free(&fx);
}

/* ---- descriptors, and signals ------------------------------------------------------------------ */

typedef struct feeder {
    int fd;
    const char *path;
} feeder;

static void *feed(void *argument)
{
    const feeder *f = argument;
    const int in = open(f->path, O_RDONLY);
    char buffer[65536];
    ssize_t n;
    while (in >= 0 && (n = read(in, buffer, sizeof buffer)) > 0)
        if (write(f->fd, buffer, (size_t)n) != n)
            break;
    if (in >= 0)
        close(in);
    close(f->fd);
    return NULL;
}

TEST(a_pipe_reports_bytes_without_a_total_until_its_end)
{
    fixture fx;
    CHECK(fixture_make(&fx));
    CHECK(write_inputs(&fx));
    const char *path = io_path(0, fx.folder, "out.npz");
    int fds[2];
    CHECK(pipe2(fds, O_CLOEXEC) == 0);
    feeder f = {fds[1], path};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, feed, &f) == 0);
    recorder_reset(&fx.calls, -1);
    cblob_file *file = NULL;
    const cblob_status status = cblob_file_open_fd(fx.context, fds[0], "a pipe", 0, 0, &file);
    pthread_join(thread, NULL);
    close(fds[0]);
    CHECK_OK(status);
    cblob_file_destroy(file);
    struct stat info;
    CHECK(stat(path, &info) == 0);
    CHECK(sequence_ok(&fx.calls, (int64_t)info.st_size, 3));
    for (int i = 0; i + 1 < fx.calls.calls; ++i)
        CHECK_EQ_INT(fx.calls.total[i], -1);
    fixture_free(&fx);
}

static volatile sig_atomic_t interrupted;
static volatile int reading, returned; /* the read began (its first call); the call returned */

static void on_signal(int signal)
{
    (void)signal;
    interrupted = 1;
}

static int32_t stop_when_interrupted(void *user_data, int64_t done, int64_t total)
{
    (void)done;
    (void)total;
    if ((*(int *)user_data)++ == 0) {
        __atomic_store_n(&reading, 1, __ATOMIC_SEQ_CST);
        return 0;
    }
    return interrupted;
}

typedef struct poker {
    pthread_t target;
    int fd;         /* the pipe's write end, closed at the end */
    bool timed_out; /* the reader had to be ended with end of file */
} poker;

/* Once the read began, signals the reader every 10 ms until the call returns (a signal that comes
 * before the read blocks only sets the flag; the next one interrupts it); after 3 s, ends it with
 * end of file instead. */
static void *poke(void *argument)
{
    poker *p = argument;
    for (int i = 0; i < 300 && !__atomic_load_n(&returned, __ATOMIC_SEQ_CST); ++i) {
        usleep(10000);
        if (__atomic_load_n(&reading, __ATOMIC_SEQ_CST))
            pthread_kill(p->target, SIGUSR1);
    }
    p->timed_out = !__atomic_load_n(&returned, __ATOMIC_SEQ_CST);
    close(p->fd);
    return NULL;
}

TEST(a_blocking_read_interrupted_by_a_signal_asks_the_callback)
{
    /* A handler without SA_RESTART, as a program that wants Ctrl-C to stop a read installs it: the
     * blocked read returns EINTR, and the library asks the callback at once. Before, it read on
     * until end of file, which a terminal never gives. */
    struct sigaction action = {.sa_handler = on_signal};
    sigemptyset(&action.sa_mask);
    CHECK(sigaction(SIGUSR1, &action, NULL) == 0);
    cblob_context *context = NULL;
    CHECK_OK(cblob_context_create(&context));
    int calls = 0;
    CHECK_OK(cblob_context_set_progress(context, stop_when_interrupted, &calls));
    int fds[2];
    CHECK(pipe2(fds, O_CLOEXEC) == 0);
    poker p = {pthread_self(), fds[1], false};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, poke, &p) == 0);
    cblob_file *file = NULL;
    const cblob_status status = cblob_file_open_fd(context, fds[0], "a terminal", 0, 0, &file);
    __atomic_store_n(&returned, 1, __ATOMIC_SEQ_CST);
    pthread_join(thread, NULL);
    close(fds[0]);
    CHECK_MSG(status == CBLOB_ERR_CANCELLED, "%s: %s", cblob_status_name(status), cblob_last_error_message());
    CHECK_MSG(!p.timed_out, "the read went on until end of file: EINTR did not ask the callback");
    CHECK(file == NULL && interrupted && calls >= 2);
    cblob_context_destroy(context);
}

/* ---- a writer killed mid-way ------------------------------------------------------------------- */

static int count_staging_folders(const char *folder)
{
    DIR *dir = opendir(folder);
    int count = 0;
    const struct dirent *entry;
    while (dir != NULL && (entry = readdir(dir)) != NULL) {
        struct stat info;
        count += strncmp(entry->d_name, ".cblob-tmp-", 11) == 0 && fstatat(dirfd(dir), entry->d_name, &info, 0) == 0 &&
                 S_ISDIR(info.st_mode);
    }
    if (dir != NULL)
        closedir(dir);
    return count;
}

TEST(a_killed_folder_writer_leaves_the_folder_as_it_was_and_the_next_one_cleans_up)
{
    fixture fx;
    CHECK(fixture_make(&fx));
    const char *path = io_path(0, fx.folder, "npy");
    int64_t files = 0;
    CHECK_OK(cblob_context_set_progress(fx.context, NULL, NULL));
    CHECK_OK(cblob_model_to_npy_folder(fx.model, 0, path, &files));
    size_t before_size = 0, after_size = 0;
    char *before = folder_image(path, &before_size);
    CHECK_OK(cblob_context_set_progress(fx.context, record_call, &fx.calls));
    fflush(NULL);
    const pid_t child = fork();
    if (child == 0) {
        recorder_reset(&fx.calls, -1);
        fx.calls.kill_at = 5; /* mid-way: files staged, none in place */
        cblob_model_to_npy_folder(fx.model, CBLOB_EXPORT_DIFF, path, &files);
        _exit(0);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the writer was not killed (status %d)", status);
    CHECK_EQ_INT(count_staging_folders(path), 1);
    /* Everything but the staging folder is as it was. */
    CHECK_OK(cblob_context_set_progress(fx.context, NULL, NULL));
    char *after = folder_image(path, &after_size);
    char *staging = strstr(after, ".cblob-tmp-");
    CHECK(staging != NULL);
    const size_t staging_line = (size_t)(strchr(staging, '\n') + 1 - after);
    const size_t staging_start = (size_t)(staging - after);
    CHECK(after_size - (staging_line - staging_start) == before_size);
    CHECK(memcmp(after, before, staging_start) == 0 &&
          memcmp(after + staging_line, before + staging_start, before_size - staging_start) == 0);
    free(after);
    free(before);
    /* The next writer removes the killed one's staging folder (its lock is gone). */
    CHECK_OK(cblob_model_to_npy_folder(fx.model, CBLOB_EXPORT_DIFF, path, &files));
    CHECK_EQ_INT(count_staging_folders(path), 0);
    CHECK_EQ_INT(io_count_temporaries(path), 0);
    fixture_free(&fx);
}
