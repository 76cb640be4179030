/* SPDX-License-Identifier: BSD-2-Clause */
/* The threads of a launch, on the host (fake_cuda_internal.h, "threads"). A launch's blocks run
 * one after another, in an order drawn from the double's seed; a block's threads run in an order
 * of their own. A twin that cooperates runs each thread of a block as a coroutine (a fiber) on a
 * stack of its own: a thread runs until it reaches __syncthreads or a warp shuffle, then the next
 * one runs; a barrier opens once every thread of the block waits at it, a warp shuffle once all
 * 32 lanes of the warp do. __shared__ variables live in the section fake_shared, filled with
 * garbage before each block, as a GPU's shared memory holds garbage: a thread that reads what no
 * thread wrote, or reads before the barrier that orders the write, computes garbage, and the
 * comparison with the CPU kernel fails. A barrier not every thread reaches, lanes of a warp split
 * between a shuffle and something else, or a partial warp mask end the process: a GPU hangs or
 * computes garbage there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include "fake_cuda_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define FAKE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAKE_ASAN 1
#endif
#endif
#ifdef FAKE_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

fake_dim3 fake_grid_dim, fake_block_dim, fake_block_idx, fake_thread_idx;

/* The twins' __shared__ variables (fake_cuda_kernels.c); weak: a build whose twins declare none
 * has no such section. */
extern unsigned char __start_fake_shared[] __attribute__((weak)), __stop_fake_shared[] __attribute__((weak));

#define STACK_BYTES ((size_t)128 << 10)
#define MAX_BLOCK 1024
#define WARP 32

typedef enum thread_state { THREAD_READY, THREAD_AT_BARRIER, THREAD_AT_WARP, THREAD_DONE } thread_state;

/* ---- fibers: a stack and where it stopped ------------------------------------------------------------ */

/* On x86-64 a switch saves the callee-saved registers on the stack it leaves and takes them from
 * the one it enters, with no system call (swapcontext makes two, and a reduction's barriers and
 * shuffles switch millions of times in a test). Elsewhere, ucontext. */
#if defined(__x86_64__)
typedef struct fiber {
    void *sp;
} fiber;

void fake_switch_stack(void **save_sp, void *load_sp);
__asm__(".text\n"
        ".globl fake_switch_stack\n"
        ".hidden fake_switch_stack\n"
        ".type fake_switch_stack, @function\n"
        "fake_switch_stack:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size fake_switch_stack, .-fake_switch_stack\n");

static void fiber_switch(fiber *from, const fiber *to)
{
    fake_switch_stack(&from->sp, to->sp);
}

/* A fiber that starts in entry(), which never returns: the first switch to it pops six zero
 * registers and "returns" into entry with the stack aligned as after a call. */
static void fiber_make(fiber *f, unsigned char *stack, size_t bytes, void (*entry)(void))
{
    void **sp = (void **)((uintptr_t)(stack + bytes) & ~(uintptr_t)15);
    *--sp = NULL; /* entry's own return address */
    --sp;
    memcpy(sp, &entry, sizeof entry);
    for (int i = 0; i < 6; ++i)
        *--sp = NULL;
    f->sp = sp;
}
#else
typedef struct fiber {
    ucontext_t context;
} fiber;

static void fiber_switch(fiber *from, const fiber *to)
{
    swapcontext(&from->context, &to->context);
}

static void fiber_make(fiber *f, unsigned char *stack, size_t bytes, void (*entry)(void))
{
    if (getcontext(&f->context) != 0)
        fake_violation("getcontext failed");
    f->context.uc_stack.ss_sp = stack;
    f->context.uc_stack.ss_size = bytes;
    f->context.uc_link = NULL;
    makecontext(&f->context, entry, 0);
}
#endif

typedef struct emulated_thread {
    fiber fiber;
    thread_state state;
} emulated_thread;

/* Kernels run under the double's lock, so one launch at a time uses this. */
static struct {
    fake_thread_fn body;
    void *args;
    unsigned int block;
    bool cooperative; /* the block's threads are fibers */
    unsigned int running;
    emulated_thread threads[MAX_BLOCK];
    unsigned char *stacks; /* MAX_BLOCK stacks, each above a guard page; made at first use */
    fiber scheduler;
    uint64_t exchange[MAX_BLOCK]; /* what each lane offers to its warp's shuffle */
#ifdef FAKE_ASAN
    const void *scheduler_stack;
    size_t scheduler_stack_bytes;
    void *scheduler_fake_stack;
#endif
} emu;

/* ---- switching between the scheduler and a thread (AddressSanitizer is told of every switch) ---- */

static unsigned char *stack_of(unsigned int thread)
{
    return emu.stacks + (size_t)thread * STACK_BYTES;
}

static void enter_thread(unsigned int thread)
{
    emu.running = thread;
    fake_thread_idx = (fake_dim3){thread, 0, 0};
#ifdef FAKE_ASAN
    __sanitizer_start_switch_fiber(&emu.scheduler_fake_stack, stack_of(thread), STACK_BYTES);
#endif
    fiber_switch(&emu.scheduler, &emu.threads[thread].fiber);
#ifdef FAKE_ASAN
    __sanitizer_finish_switch_fiber(emu.scheduler_fake_stack, NULL, NULL);
#endif
}

/* A thread stops until the scheduler makes it ready again. */
static void wait_as(thread_state state)
{
    if (!emu.cooperative)
        fake_violation("a twin waits for other threads, but the generator (templates/tests/fake_cuda_kernels.c.j2) "
                       "runs it one thread at a time: add what it calls to the list of cooperative constructs there");
    emulated_thread *self = &emu.threads[emu.running];
    self->state = state;
#ifdef FAKE_ASAN
    void *fake_stack = NULL;
    __sanitizer_start_switch_fiber(&fake_stack, emu.scheduler_stack, emu.scheduler_stack_bytes);
#endif
    fiber_switch(&self->fiber, &emu.scheduler);
#ifdef FAKE_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, &emu.scheduler_stack, &emu.scheduler_stack_bytes);
#endif
}

static void thread_main(void)
{
#ifdef FAKE_ASAN
    __sanitizer_finish_switch_fiber(NULL, &emu.scheduler_stack, &emu.scheduler_stack_bytes);
#endif
    emu.body(emu.args);
    emulated_thread *self = &emu.threads[emu.running];
    self->state = THREAD_DONE;
#ifdef FAKE_ASAN
    __sanitizer_start_switch_fiber(NULL, emu.scheduler_stack, emu.scheduler_stack_bytes); /* this fiber ends */
#endif
    fiber_switch(&self->fiber, &emu.scheduler); /* never resumed */
}

static void make_stacks(void)
{
    if (emu.stacks != NULL)
        return;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *area = mmap(NULL, MAX_BLOCK * STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    if (area == MAP_FAILED)
        fake_violation("no address space for the stacks of emulated GPU threads");
    emu.stacks = area;
    for (unsigned int t = 0; t < MAX_BLOCK; ++t)
        if (mprotect(stack_of(t), page, PROT_NONE) != 0) /* a stack overflow faults at once */
            fake_violation("cannot guard the stacks of emulated GPU threads");
}

/* ---- orders ------------------------------------------------------------------------------------------- */

static void shuffle(unsigned int *order, unsigned int count)
{
    for (unsigned int i = 0; i < count; ++i)
        order[i] = i;
    for (unsigned int i = count; i > 1; --i) {
        const unsigned int j = (unsigned int)(fake_random() % i);
        const unsigned int kept = order[i - 1];
        order[i - 1] = order[j];
        order[j] = kept;
    }
}

/* ---- one block as coroutines -------------------------------------------------------------------------- */

static void fill_shared_memory_with_garbage(void)
{
    const uintptr_t start = (uintptr_t)__start_fake_shared, stop = (uintptr_t)__stop_fake_shared;
    if (start != 0 && stop > start)
        memset(__start_fake_shared, 0xA5, stop - start);
}

static unsigned int count_in(thread_state state, unsigned int first, unsigned int count)
{
    unsigned int found = 0;
    for (unsigned int t = first; t < first + count; ++t)
        found += emu.threads[t].state == state;
    return found;
}

/* Makes ready the threads that may go on: each warp whose 32 lanes all wait at a shuffle, or the
 * whole block once every thread waits at the barrier. False when none may. */
static bool release(void)
{
    bool released = false;
    for (unsigned int warp = 0; warp < emu.block; warp += WARP)
        if (count_in(THREAD_AT_WARP, warp, WARP) == WARP) {
            for (unsigned int t = warp; t < warp + WARP; ++t)
                emu.threads[t].state = THREAD_READY;
            released = true;
        }
    if (!released && count_in(THREAD_AT_BARRIER, 0, emu.block) == emu.block) {
        for (unsigned int t = 0; t < emu.block; ++t)
            emu.threads[t].state = THREAD_READY;
        released = true;
    }
    return released;
}

static void report_deadlock(void)
{
    fake_violation("block %u of a grid of %u: %u threads wait at __syncthreads, %u at a warp shuffle and %u have "
                   "returned; a barrier must be reached by every thread of the block and a shuffle by every lane of the "
                   "warp (a GPU hangs or computes garbage)",
                   fake_block_idx.x, fake_grid_dim.x, count_in(THREAD_AT_BARRIER, 0, emu.block),
                   count_in(THREAD_AT_WARP, 0, emu.block), count_in(THREAD_DONE, 0, emu.block));
}

static void run_block_as_coroutines(const unsigned int *order)
{
    for (unsigned int t = 0; t < emu.block; ++t) {
        fiber_make(&emu.threads[t].fiber, stack_of(t), STACK_BYTES, thread_main);
        emu.threads[t].state = THREAD_READY;
    }
    fill_shared_memory_with_garbage();
    for (;;) {
        for (unsigned int k = 0; k < emu.block; ++k)
            if (emu.threads[order[k]].state == THREAD_READY)
                enter_thread(order[k]);
        if (count_in(THREAD_DONE, 0, emu.block) == emu.block)
            return;
        if (!release())
            report_deadlock();
    }
}

void fake_run_threads(unsigned int grid, unsigned int block, bool cooperative, fake_thread_fn body, void *args)
{
    if (block > MAX_BLOCK || block % WARP != 0)
        fake_violation("a block of %u threads cannot be emulated", block);
    unsigned int *blocks = malloc((size_t)grid * sizeof *blocks);
    if (blocks == NULL)
        fake_violation("no memory to order %u blocks", grid);
    unsigned int threads[MAX_BLOCK];
    if (cooperative)
        make_stacks();
    emu.body = body;
    emu.args = args;
    emu.block = block;
    emu.cooperative = cooperative;
    fake_grid_dim = (fake_dim3){grid, 1, 1};
    fake_block_dim = (fake_dim3){block, 1, 1};
    shuffle(blocks, grid);
    for (unsigned int k = 0; k < grid; ++k) {
        fake_block_idx = (fake_dim3){blocks[k], 0, 0};
        shuffle(threads, block);
        if (cooperative) {
            run_block_as_coroutines(threads);
            continue;
        }
        for (unsigned int t = 0; t < block; ++t) {
            fake_thread_idx = (fake_dim3){threads[t], 0, 0};
            body(args);
        }
    }
    free(blocks);
}

/* ---- what the twins call ------------------------------------------------------------------------------ */

void fake_syncthreads(void)
{
    wait_as(THREAD_AT_BARRIER);
}

static uint64_t warp_exchange(unsigned int mask, uint64_t value, unsigned int source_lane)
{
    if (mask != 0xffffffffu)
        fake_violation("a warp shuffle with mask %#x: only whole warps (0xffffffff) are emulated", mask);
    const unsigned int self = emu.running;
    emu.exchange[self] = value;
    wait_as(THREAD_AT_WARP); /* every lane has offered its value */
    const uint64_t taken = emu.exchange[(self & ~(unsigned int)(WARP - 1)) + source_lane];
    wait_as(THREAD_AT_WARP); /* every lane has taken one, so the next shuffle may overwrite */
    return taken;
}

double fake_shfl_down_double(unsigned int mask, double value, int delta)
{
    const unsigned int lane = emu.running % WARP;
    /* A source lane past the warp's end gives the caller its own value, as on a GPU. */
    const unsigned int source = delta >= 0 && lane + (unsigned int)delta < WARP ? lane + (unsigned int)delta : lane;
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    bits = warp_exchange(mask, bits, source);
    memcpy(&value, &bits, sizeof value);
    return value;
}
