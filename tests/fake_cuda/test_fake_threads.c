/* SPDX-License-Identifier: BSD-2-Clause */
/* The test double's emulation of a launch's threads (fake_threads.c), on small kernels written
 * here: a barrier orders shared memory and a missing one shows as garbage; warp shuffles add up a
 * warp; a barrier some threads skip, a shuffle part of a warp skips and a barrier in a kernel
 * run one thread at a time end the process with a message, as a GPU would hang or compute
 * garbage there. Those run in a child process. */
#include <stdarg.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_cuda_internal.h"
#include "harness.h"

/* What fake_threads.c needs from the rest of the double. */
uint64_t fake_random(void)
{
    static uint64_t state = 88172645463325252ull;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

void fake_violation(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    _exit(3);
}

#define SHARED static __attribute__((section("fake_shared"), aligned(16)))
#define BLOCK 64

static uint32_t seen[4][BLOCK];

/* Each thread writes its slot, then reads its neighbour's, with or without a barrier between. */
static void neighbours(void *with_barrier)
{
    SHARED uint32_t slots[BLOCK];
    const unsigned int t = fake_thread_idx.x;
    slots[t] = 1000 * fake_block_idx.x + t;
    if (*(const bool *)with_barrier)
        fake_syncthreads();
    seen[fake_block_idx.x][t] = slots[(t + 1) % BLOCK];
}

TEST(a_barrier_orders_shared_memory_in_every_block)
{
    bool with_barrier = true;
    fake_run_threads(4, BLOCK, true, neighbours, &with_barrier);
    for (unsigned int b = 0; b < 4; ++b)
        for (unsigned int t = 0; t < BLOCK; ++t)
            CHECK_EQ_INT(seen[b][t], 1000 * b + (t + 1) % BLOCK);
}

TEST(without_the_barrier_some_thread_reads_garbage)
{
    bool with_barrier = false;
    fake_run_threads(4, BLOCK, true, neighbours, &with_barrier);
    int garbage = 0;
    for (unsigned int b = 0; b < 4; ++b)
        for (unsigned int t = 0; t < BLOCK; ++t)
            garbage += seen[b][t] == 0xA5A5A5A5u;
    CHECK(garbage > 0);
}

static double warp_totals[BLOCK / 32];

static void warp_sum(void *unused)
{
    (void)unused;
    double value = fake_thread_idx.x + 0.5;
    for (int offset = 16; offset > 0; offset >>= 1)
        value += fake_shfl_down_double(0xffffffffu, value, offset);
    if (fake_thread_idx.x % 32 == 0)
        warp_totals[fake_thread_idx.x / 32] = value;
}

TEST(warp_shuffles_add_up_each_warp)
{
    fake_run_threads(1, BLOCK, true, warp_sum, NULL);
    CHECK(warp_totals[0] == 16.0 + 31.0 * 32 / 2);
    CHECK(warp_totals[1] == 16.0 + (32.0 + 63.0) * 32 / 2);
}

/* Runs `kernel` in a child and checks that it ends the process with a message naming `words`. */
static void ends_the_process(fake_thread_fn kernel, bool cooperative, const char *words)
{
    int pipe_ends[2];
    CHECK(pipe(pipe_ends) == 0);
    fflush(NULL);
    const pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        dup2(pipe_ends[1], STDERR_FILENO);
        fake_run_threads(1, BLOCK, cooperative, kernel, NULL);
        _exit(0);
    }
    close(pipe_ends[1]);
    char message[1024] = "";
    size_t length = 0;
    for (ssize_t got; length < sizeof message - 1 && (got = read(pipe_ends[0], message + length, sizeof message - 1 - length)) > 0;)
        length += (size_t)got;
    message[length] = '\0';
    close(pipe_ends[0]);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 3, "the child ended with status %#x: %s", status, message);
    CHECK_MSG(strstr(message, words) != NULL, "the message does not name \"%s\": %s", words, message);
}

static void barrier_half_the_block_skips(void *unused)
{
    (void)unused;
    if (fake_thread_idx.x < 32)
        fake_syncthreads();
}

static void shuffle_half_a_warp_skips(void *unused)
{
    (void)unused;
    if (fake_thread_idx.x % 32 < 16)
        fake_shfl_down_double(0xffffffffu, 1.0, 1);
}

static void shuffle_with_a_partial_mask(void *unused)
{
    (void)unused;
    fake_shfl_down_double(0x0000ffffu, 1.0, 1);
}

static void barrier(void *unused)
{
    (void)unused;
    fake_syncthreads();
}

TEST(a_barrier_some_threads_skip_ends_the_process) { ends_the_process(barrier_half_the_block_skips, true, "__syncthreads"); }
TEST(a_shuffle_part_of_a_warp_skips_ends_the_process) { ends_the_process(shuffle_half_a_warp_skips, true, "warp shuffle"); }
TEST(a_partial_warp_mask_ends_the_process) { ends_the_process(shuffle_with_a_partial_mask, true, "0xffff"); }
TEST(a_barrier_in_a_kernel_run_one_thread_at_a_time_ends_the_process) { ends_the_process(barrier, false, "cooperative"); }
