/* SPDX-License-Identifier: BSD-2-Clause */
/* Caffe's blob math (update, asum, sumsq, scale) against its peers, measured in one run: cblob
 * through the public API (shared library, every check) on one thread and on its default threads;
 * the calls Caffe's CPU blob makes, OpenBLAS's cblas_?axpy, ?asum, ?dot and ?scal, on one thread
 * and on OpenBLAS's default; BLIS's bli_?axpyv, ?asumv, ?dotv, ?scalv; NumPy in child processes
 * (one thread and its default); a plain loop compiled -O3 -march=native -ffast-math
 * (bench_loops.c); and memcpy of one array.
 *
 *   bench_math [--quick] [--rounds N] [--sizes 1e3,1e5,1e7,1e8] [--python PATH | --no-numpy]
 *
 * OpenBLAS is opened with dlopen (libopenblas.so.0), so that its cblas.h never meets BLIS's and
 * the benchmark builds without it; without it its columns are "-". NumPy runs in
 * bench/numpy_peer.py under PATH (default /usr/bin/python3).
 *
 * GB/s counts bytes read plus bytes written (update: 3 arrays, scale: 2, asum and sumsq: 1,
 * memcpy: 2). C contenders work on the blob's own memory, so page placement and page size favour
 * nobody; NumPy works on arrays of its own. Each figure is the median of interleaved rounds, with
 * min-max. Targets (issue 15): cblob at least 1.0x the fastest peer using as many threads (one
 * thread: loop, BLIS, OpenBLAS 1, NumPy 1; default: OpenBLAS and NumPy default), and at 1e7
 * elements and more at least 0.9x memcpy's bandwidth. */
#define _GNU_SOURCE /* pipe2 */
#include <blis.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_loops.h"
#include "bench_openblas.h"
#include "bench_timing.h"
#include "cblob/cblob.h"

extern char **environ;

static bench_plan plan = {.rounds = 7, .batch_seconds = 0.05};

static void check(cblob_status status, const char *what)
{
    if (status != CBLOB_OK) {
        fprintf(stderr, "bench_math: %s failed: %s\n", what, cblob_last_error_message());
        exit(1);
    }
}

static bench_openblas openblas;

/* ---- NumPy, in a child process ----------------------------------------------------------- */

typedef struct numpy_child {
    pid_t pid;
    FILE *to, *from;
} numpy_child;

static char *numpy_ask(numpy_child *child, const char *command, char *answer, size_t size)
{
    fprintf(child->to, "%s\n", command);
    fflush(child->to);
    if (fgets(answer, (int)size, child->from) == NULL || strncmp(answer, "error", 5) == 0) {
        fprintf(stderr, "bench_math: the NumPy child answered \"%s\" to \"%s\"\n", answer, command);
        exit(1);
    }
    answer[strcspn(answer, "\n")] = '\0';
    return answer;
}

/* Starts bench/numpy_peer.py under python; one_thread limits its BLAS to one thread. */
static bool numpy_start(numpy_child *child, const char *python, bool one_thread)
{
    /* Close-on-exec: a second child must not inherit the first one's pipes, or the first would
     * never see its input end. */
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0)
        return false;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    posix_spawn_file_actions_addclose(&actions, to_child[1]);
    posix_spawn_file_actions_addclose(&actions, from_child[0]);
    char **env = environ;
    char *limited[256];
    if (one_thread) {
        int n = 0;
        limited[n++] = "OPENBLAS_NUM_THREADS=1";
        limited[n++] = "OMP_NUM_THREADS=1";
        limited[n++] = "MKL_NUM_THREADS=1";
        for (char **e = environ; *e != NULL && n < 255; ++e)
            if (strncmp(*e, "OPENBLAS_NUM_THREADS=", 21) != 0 && strncmp(*e, "OMP_NUM_THREADS=", 16) != 0)
                limited[n++] = *e;
        limited[n] = NULL;
        env = limited;
    }
    char *argv[] = {(char *)python, CBLOB_BENCH_DIR "/numpy_peer.py", NULL};
    const int failed = posix_spawn(&child->pid, python, &actions, NULL, argv, env);
    posix_spawn_file_actions_destroy(&actions);
    close(to_child[0]);
    close(from_child[1]);
    if (failed != 0) {
        close(to_child[1]);
        close(from_child[0]);
        return false;
    }
    child->to = fdopen(to_child[1], "w");
    child->from = fdopen(from_child[0], "r");
    char answer[256];
    fprintf(child->to, "info\n");
    fflush(child->to);
    return fgets(answer, sizeof answer, child->from) != NULL && strncmp(answer, "NumPy", 5) == 0;
}

static void numpy_stop(numpy_child *child)
{
    fclose(child->to);
    fclose(child->from);
    waitpid(child->pid, NULL, 0);
}

/* ---- the state every contender works on -------------------------------------------------- */

typedef struct state {
    cblob_context *context;
    cblob_blob *blob, *scratch;
    cblob_dtype dtype;
    int64_t n;
    void *x, *y, *copy_to; /* the blob's data and diff, and the scratch blob's data */
    size_t bytes;          /* one array */
    int halve[8];          /* each scale contender alternates 0.5 and 2 on its own */
    double sink;
    const char *op;
    numpy_child *numpy[2];
} state;

typedef struct contender_state {
    state *s;
    int variant; /* threads for cblob (1 or 0: default), OpenBLAS (1 or its default), NumPy child */
} contender_state;

static double next_factor(state *s, int contender)
{
    s->halve[contender] = !s->halve[contender];
    return s->halve[contender] ? 0.5 : 2.0;
}

static bool is_f32(const state *s)
{
    return s->dtype == CBLOB_DTYPE_FLOAT32;
}

static void run_memcpy(void *p)
{
    state *s = ((contender_state *)p)->s;
    memcpy(s->copy_to, s->x, s->bytes);
}

static void run_cblob(void *p)
{
    contender_state *c = p;
    state *s = c->s;
    check(cblob_context_set_num_threads(s->context, c->variant), "set_num_threads");
    if (strcmp(s->op, "update") == 0)
        check(cblob_blob_update(s->blob), "update");
    else if (strcmp(s->op, "asum") == 0)
        check(cblob_blob_asum(s->blob, CBLOB_PART_DATA, &s->sink), "asum");
    else if (strcmp(s->op, "sumsq") == 0)
        check(cblob_blob_sumsq(s->blob, CBLOB_PART_DATA, &s->sink), "sumsq");
    else
        check(cblob_blob_scale(s->blob, CBLOB_PART_DATA, next_factor(s, c->variant)), "scale");
}

static void run_loop(void *p)
{
    state *s = ((contender_state *)p)->s;
    if (strcmp(s->op, "update") == 0)
        is_f32(s) ? loop_sub_f32(s->n, s->y, s->x) : loop_sub_f64(s->n, s->y, s->x);
    else if (strcmp(s->op, "asum") == 0)
        s->sink = is_f32(s) ? loop_asum_f32(s->n, s->x) : loop_asum_f64(s->n, s->x);
    else if (strcmp(s->op, "sumsq") == 0)
        s->sink = is_f32(s) ? loop_sumsq_f32(s->n, s->x) : loop_sumsq_f64(s->n, s->x);
    else if (is_f32(s))
        loop_scale_f32(s->n, (float)next_factor(s, 2), s->x);
    else
        loop_scale_f64(s->n, next_factor(s, 2), s->x);
}

static void run_blis(void *p)
{
    state *s = ((contender_state *)p)->s;
    const dim_t n = (dim_t)s->n;
    float sf = 0, alpha_f = -1.0f;
    double alpha_d = -1.0;
    if (strcmp(s->op, "update") == 0) {
        if (is_f32(s))
            bli_saxpyv(BLIS_NO_CONJUGATE, n, &alpha_f, s->y, 1, s->x, 1);
        else
            bli_daxpyv(BLIS_NO_CONJUGATE, n, &alpha_d, s->y, 1, s->x, 1);
    } else if (strcmp(s->op, "asum") == 0) {
        if (is_f32(s)) {
            bli_sasumv(n, s->x, 1, &sf);
            s->sink = sf;
        } else {
            bli_dasumv(n, s->x, 1, &s->sink);
        }
    } else if (strcmp(s->op, "sumsq") == 0) {
        if (is_f32(s)) {
            bli_sdotv(BLIS_NO_CONJUGATE, BLIS_NO_CONJUGATE, n, s->x, 1, s->x, 1, &sf);
            s->sink = sf;
        } else {
            bli_ddotv(BLIS_NO_CONJUGATE, BLIS_NO_CONJUGATE, n, s->x, 1, s->x, 1, &s->sink);
        }
    } else {
        double factor = next_factor(s, 3);
        float factor_f = (float)factor;
        if (is_f32(s))
            bli_sscalv(BLIS_NO_CONJUGATE, n, &factor_f, s->x, 1);
        else
            bli_dscalv(BLIS_NO_CONJUGATE, n, &factor, s->x, 1);
    }
}

/* Caffe's CPU blob: Update is axpy(-1, diff, data), asum_data is ?asum, sumsq_data is ?dot of
 * data with itself, scale_data is ?scal. */
static void run_openblas(void *p)
{
    contender_state *c = p;
    state *s = c->s;
    const int n = (int)s->n;
    openblas.set_num_threads(c->variant);
    if (strcmp(s->op, "update") == 0)
        is_f32(s) ? openblas.saxpy(n, -1.0f, s->y, 1, s->x, 1) : openblas.daxpy(n, -1.0, s->y, 1, s->x, 1);
    else if (strcmp(s->op, "asum") == 0)
        s->sink = is_f32(s) ? openblas.sasum(n, s->x, 1) : openblas.dasum(n, s->x, 1);
    else if (strcmp(s->op, "sumsq") == 0)
        s->sink = is_f32(s) ? openblas.sdot(n, s->x, 1, s->x, 1) : openblas.ddot(n, s->x, 1, s->x, 1);
    else if (is_f32(s))
        openblas.sscal(n, (float)next_factor(s, 4 + (c->variant > 1)), s->x, 1);
    else
        openblas.dscal(n, next_factor(s, 4 + (c->variant > 1)), s->x, 1);
}

static double batch_numpy(void *p, long calls)
{
    contender_state *c = p;
    char command[64], answer[64];
    snprintf(command, sizeof command, "time %s %ld", c->s->op, calls);
    return atof(numpy_ask(c->s->numpy[c->variant], command, answer, sizeof answer));
}

/* ---- one cell of the table ------------------------------------------------------------- */

enum { MEMCPY, CBLOB_1, CBLOB_N, LOOP, BLIS_1, OPENBLAS_1, OPENBLAS_N, NUMPY_1, NUMPY_N, CONTENDERS };
static const char *const names[CONTENDERS] = {"memcpy", "cblob 1", "cblob N", "loop",     "BLIS",
                                              "OpenBLAS 1", "OpenBLAS N", "NumPy 1", "NumPy N"};

static int arrays_moved(const char *op)
{
    return strcmp(op, "update") == 0 ? 3 : strcmp(op, "scale") == 0 ? 2 : 1;
}

static bool cell(state *s, bool have_openblas, bool have_numpy, int *misses)
{
    contender_state cs[CONTENDERS];
    bench_contender list[CONTENDERS];
    int index[CONTENDERS], count = 0;
    const struct {
        int id;
        bench_fn run;
        bench_batch_fn batch;
        int variant;
        bool present;
    } all[CONTENDERS] = {
        {MEMCPY, run_memcpy, NULL, 0, true},
        {CBLOB_1, run_cblob, NULL, 1, true},
        {CBLOB_N, run_cblob, NULL, 0, true},
        {LOOP, run_loop, NULL, 0, true},
        {BLIS_1, run_blis, NULL, 0, true},
        {OPENBLAS_1, run_openblas, NULL, 1, have_openblas},
        {OPENBLAS_N, run_openblas, NULL, openblas.default_threads, have_openblas},
        {NUMPY_1, NULL, batch_numpy, 0, have_numpy},
        {NUMPY_N, NULL, batch_numpy, 1, have_numpy},
    };
    for (int k = 0; k < CONTENDERS; ++k) {
        index[k] = -1;
        if (!all[k].present)
            continue;
        cs[count] = (contender_state){s, all[k].variant};
        list[count] = (bench_contender){names[k], all[k].run, all[k].batch, &cs[count],
                                        k == OPENBLAS_N || k == NUMPY_N ? BENCH_OPENBLAS_SETTLE_SECONDS : 0};
        index[k] = count++;
    }
    bench_time t[CONTENDERS];
    bench_measure(&plan, count, list, t);
    const double element = is_f32(s) ? 4 : 8;
    const double moved = arrays_moved(s->op) * (double)s->n * element, copied = 2.0 * (double)s->n * element;
    double gbs[CONTENDERS];
    printf("%-7s %-6s %9.0e", is_f32(s) ? "float32" : "float64", s->op, (double)s->n);
    for (int k = 0; k < CONTENDERS; ++k) {
        gbs[k] = index[k] < 0 ? 0 : (k == MEMCPY ? copied : moved) / t[index[k]].median * 1e-9;
        if (index[k] < 0)
            printf(" %8s", "-");
        else
            printf(" %8.2f", gbs[k]);
    }
    /* The fastest peer with as many threads, and memcpy's bandwidth. */
    double one = gbs[LOOP], many = 0;
    for (int k = BLIS_1; k < CONTENDERS; ++k) {
        const bool multi = k == OPENBLAS_N || k == NUMPY_N;
        if (multi && gbs[k] > many)
            many = gbs[k];
        if (!multi && gbs[k] > one)
            one = gbs[k];
    }
    const double vs_one = gbs[CBLOB_1] / one, vs_many = many > 0 ? gbs[CBLOB_N] / many : INFINITY;
    const double vs_memcpy = gbs[CBLOB_N] / gbs[MEMCPY];
    const bool ok = vs_one >= 1.0 && vs_many >= 1.0 && (s->n < 10000000 || vs_memcpy >= 0.9);
    printf(" | %5.2f %5.2f %5.2f %s\n", vs_one, vs_many, vs_memcpy, ok ? "met" : "MISSED");
    /* min-max of cblob and of every peer, in GB/s, on a second line */
    printf("%24s", "min-max:");
    for (int k = 0; k < CONTENDERS; ++k) {
        if (index[k] < 0) {
            printf(" %8s", "");
            continue;
        }
        const double bytes = (k == MEMCPY ? copied : moved) * 1e-9;
        printf(" %3.0f-%-4.0f", bytes / t[index[k]].max, bytes / t[index[k]].min);
    }
    printf("\n");
    fflush(stdout);
    *misses += !ok;
    return ok;
}

/* Values in [-1, 1): update subtracts a tiny diff, so data drifts slowly and stays finite. */
static void fill(void *ptr, cblob_dtype dtype, int64_t n, double magnitude)
{
    for (int64_t i = 0; i < n; ++i) {
        const double v = magnitude * ((double)((i * 7919) % 2000) / 1000.0 - 1.0);
        if (dtype == CBLOB_DTYPE_FLOAT32)
            ((float *)ptr)[i] = (float)v;
        else
            ((double *)ptr)[i] = v;
    }
}

static int parse_sizes(const char *text, int64_t *sizes)
{
    int count = 0;
    for (const char *p = text; *p != '\0' && count < 8;) {
        char *end;
        sizes[count++] = (int64_t)strtod(p, &end);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p != '\0')
            break;
    }
    return count;
}

int main(int argc, char **argv)
{
    int64_t sizes[8] = {1000, 100000, 10000000, 100000000};
    int num_sizes = 4;
    const char *python = "/usr/bin/python3";
    bool want_numpy = true;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) {
            plan.rounds = 3;
            plan.batch_seconds = 0.01;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            plan.rounds = bench_parse_rounds(argv[++i]);
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            num_sizes = parse_sizes(argv[++i], sizes);
        } else if (strcmp(argv[i], "--python") == 0 && i + 1 < argc) {
            python = argv[++i];
        } else if (strcmp(argv[i], "--no-numpy") == 0) {
            want_numpy = false;
        } else {
            fprintf(stderr, "usage: bench_math [--quick] [--rounds N] [--sizes 1e3,1e5,...] [--python PATH | --no-numpy]\n");
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    bench_print_machine("bench_math");
    const bool have_openblas = bench_openblas_open(&openblas);
    numpy_child children[2];
    const bool have_numpy = want_numpy && numpy_start(&children[0], python, true) && numpy_start(&children[1], python, false);
    char answer[256] = "not run";
    if (have_numpy)
        numpy_ask(&children[1], "info", answer, sizeof answer);
    cblob_context *context;
    int32_t threads = 0;
    check(cblob_context_create(&context), "context");
    check(cblob_context_num_threads(context, &threads), "num_threads");
    printf("cblob %s (%s), default %d threads; %s; OpenBLAS %s (default %d threads); %s\n", cblob_version(),
           cblob_cpu_features(), (int)threads, cblob_blas_info(), have_openblas ? "libopenblas.so.0" : "missing",
           openblas.default_threads, have_numpy ? answer : "NumPy: not run");
    printf("GB/s (bytes read + written), medians of %d interleaved rounds; N = default threads.\n"
           "Ratios: cblob 1 / fastest one-thread peer, cblob N / fastest default-thread peer, cblob N / memcpy.\n\n",
           plan.rounds);
    printf("%-7s %-6s %9s", "dtype", "op", "n");
    for (int k = 0; k < CONTENDERS; ++k)
        printf(" %8s", names[k]);
    printf(" | %5s %5s %5s\n", "/1", "/N", "/mem");

    const cblob_dtype dtypes[2] = {CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64};
    const char *const ops[4] = {"update", "asum", "sumsq", "scale"};
    int misses = 0;
    for (int d = 0; d < 2; ++d) {
        for (int z = 0; z < num_sizes; ++z) {
            state s = {.context = context, .dtype = dtypes[d], .n = sizes[z], .numpy = {&children[0], &children[1]}};
            s.bytes = (size_t)s.n * (is_f32(&s) ? 4 : 8);
            check(cblob_blob_create(context, s.dtype, 1, &s.n, &s.blob), "create");
            check(cblob_blob_create(context, s.dtype, 1, &s.n, &s.scratch), "create");
            check(cblob_blob_mutable_cpu_ptr(s.blob, CBLOB_PART_DATA, &s.x), "data");
            check(cblob_blob_mutable_cpu_ptr(s.blob, CBLOB_PART_DIFF, &s.y), "diff");
            check(cblob_blob_mutable_cpu_ptr(s.scratch, CBLOB_PART_DATA, &s.copy_to), "scratch");
            fill(s.x, s.dtype, s.n, 1.0);
            fill(s.y, s.dtype, s.n, 1e-9);
            memset(s.copy_to, 0, s.bytes);
            if (have_numpy) {
                char command[64];
                snprintf(command, sizeof command, "setup %s %lld", is_f32(&s) ? "float32" : "float64", (long long)s.n);
                for (int c = 0; c < 2; ++c)
                    numpy_ask(&children[c], command, answer, sizeof answer);
            }
            for (int o = 0; o < 4; ++o) {
                s.op = ops[o];
                cell(&s, have_openblas, have_numpy, &misses);
            }
            cblob_blob_destroy(s.blob);
            cblob_blob_destroy(s.scratch);
        }
    }
    if (have_numpy)
        for (int c = 0; c < 2; ++c)
            numpy_stop(&children[c]);
    cblob_context_destroy(context);
    printf("\n%s\n", misses == 0 ? "all targets met" : "some targets missed (see MISSED rows)");
    return 0;
}
