/* SPDX-License-Identifier: BSD-2-Clause */
/* The test double's streams, events and the order queued work runs in (fake_cuda.h says what it
 * models). Each stream is a queue numbered from 1; `completed` counts the work that has run, so a
 * dependency is a (stream, number) pair, met once the stream has completed that many. Work runs
 * only through run_until(): the work asked for and, before it, everything that work depends on,
 * in a random order the dependencies allow (deferred mode) or queue order (immediate mode, where
 * everything earlier has already run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "fake_cuda_internal.h"

#define MAX_ARGS 16

typedef enum op_kind { OP_COPY, OP_COPY_2D, OP_MEMSET, OP_LAUNCH, OP_CALL, OP_MARK, OP_ALLOC, OP_FREE } op_kind;

typedef struct dependency {
    fake_stream *stream;
    uint64_t number;
} dependency;

typedef struct op {
    op_kind kind;
    uint64_t number;
    uint64_t sequence; /* in the double's one sequence of queued work and allocations */
    const int *hold;   /* the work cannot start while *hold is nonzero */
    struct op *next;
    dependency *deps;
    size_t dep_count;
    /* copies and memsets: device addresses, or host addresses for the host side */
    uint64_t dst, src;
    size_t bytes, dst_pitch, src_pitch, height;
    unsigned char value;
    unsigned char *staged; /* a pageable source, copied when queued */
    /* launches */
    const fake_kernel *kernel;
    uint64_t args[MAX_ARGS];
    unsigned int grid, block;
    /* calls */
    fake_call_fn call;
    void *payload;
    uint64_t addresses[4];
    int address_count;
} op;

struct fake_stream {
    int device;
    bool legacy;     /* the context's NULL stream */
    bool blocking;   /* waits for the legacy stream and it for this one */
    bool destroyed;  /* the handle is gone; queued work still runs */
    uint64_t queued, completed, needed;
    op *head, *tail;
    fake_stream *next_stream;
};

typedef struct fake_event {
    fake_stream *stream; /* NULL until recorded */
    uint64_t number;
} fake_event;

static fake_stream *streams;   /* every stream ever made, destroyed ones too: dependencies name them */
static fake_stream legacy_streams[FAKE_MAX_DEVICES], per_thread_streams[FAKE_MAX_DEVICES];
static uint64_t random_state;
static int fault_to_inject;
static uint64_t sequence;                    /* the last number handed out */
static uint64_t running_sequence = UINT64_MAX; /* of the work running now */

uint64_t fake_next_sequence(void)
{
    fake_lock();
    const uint64_t next = ++sequence;
    fake_unlock(0);
    return next;
}

uint64_t fake_running_sequence(void)
{
    return running_sequence;
}

void fake_queue_configure(int device_count, uint64_t seed)
{
    random_state = seed * 0x9E3779B97F4A7C15ull + 1;
    streams = NULL;
    for (int d = 0; d < device_count && d < FAKE_MAX_DEVICES; ++d) {
        legacy_streams[d] = (fake_stream){.device = d, .legacy = true, .blocking = true};
        per_thread_streams[d] = (fake_stream){.device = d, .blocking = true};
        legacy_streams[d].next_stream = &per_thread_streams[d];
        per_thread_streams[d].next_stream = streams;
        streams = &legacy_streams[d];
    }
}

uint64_t fake_random(void)
{
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return random_state;
}

FAKE_API void fake_cuda_inject_fault(int error)
{
    fake_lock();
    fault_to_inject = error;
    fake_unlock(0);
}

/* ---- streams ------------------------------------------------------------------------------------ */

fake_stream *fake_find_stream(void *handle)
{
    const int device = fake_current_device();
    if (device < 0)
        return NULL;
    if (handle == NULL || handle == (void *)CBCU_STREAM_LEGACY)
        return &legacy_streams[device];
    if (handle == (void *)CBCU_STREAM_PER_THREAD)
        return &per_thread_streams[device]; /* one per context here, not per thread */
    for (fake_stream *stream = streams; stream != NULL; stream = stream->next_stream)
        if (stream == handle && !stream->destroyed)
            return stream;
    return NULL;
}

int fake_stream_device(const fake_stream *stream)
{
    return stream->device;
}

FAKE_API cbcu_result cuStreamCreate(cbcu_stream *out, unsigned int flags)
{
    if (out == NULL || (flags & ~(unsigned)CBCU_STREAM_NON_BLOCKING) != 0)
        return CBCU_ERROR_INVALID_VALUE;
    const int status = fake_context_status();
    if (status != 0)
        return status;
    fake_stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL)
        return CBCU_ERROR_OUT_OF_MEMORY;
    fake_lock();
    stream->device = fake_current_device();
    stream->blocking = (flags & CBCU_STREAM_NON_BLOCKING) == 0;
    stream->next_stream = streams;
    streams = stream;
    fake_counters.streams_created++;
    *out = (cbcu_stream)stream;
    return fake_unlock(CBCU_SUCCESS);
}

/* Queued work still runs after the handle is destroyed, as on a GPU. */
FAKE_API cbcu_result cuStreamDestroy_v2(cbcu_stream handle)
{
    fake_lock();
    fake_stream *stream = fake_find_stream(handle);
    if (stream == NULL || stream->legacy || stream == &per_thread_streams[stream->device])
        return fake_unlock(CBCU_ERROR_INVALID_HANDLE);
    stream->destroyed = true;
    fake_counters.streams_destroyed++;
    return fake_unlock(CBCU_SUCCESS);
}

FAKE_API cbcu_result cuStreamGetCtx(cbcu_stream handle, cbcu_context *context)
{
    fake_lock();
    fake_stream *stream = fake_find_stream(handle);
    if (stream == NULL || context == NULL)
        return fake_unlock(stream == NULL ? CBCU_ERROR_INVALID_HANDLE : CBCU_ERROR_INVALID_VALUE);
    *context = fake_device_context(stream->device);
    return fake_unlock(CBCU_SUCCESS);
}

/* ---- running work --------------------------------------------------------------------------------- */

static void add_dependency(op *work, fake_stream *stream, uint64_t number)
{
    if (number == 0 || number <= stream->completed)
        return;
    dependency *grown = realloc(work->deps, (work->dep_count + 1) * sizeof *grown);
    if (grown == NULL)
        fake_violation("no memory for a dependency");
    work->deps = grown;
    work->deps[work->dep_count++] = (dependency){stream, number};
}

static bool ready(const op *work)
{
    if (work->hold != NULL && *work->hold != 0)
        return false;
    for (size_t i = 0; i < work->dep_count; ++i)
        if (work->deps[i].stream->completed < work->deps[i].number)
            return false;
    return true;
}

static unsigned char *device_or_host(uint64_t address, size_t bytes)
{
    return address >= FAKE_DEVICE_TAG ? fake_device_range((void *)(uintptr_t)address, bytes)
                                      : fake_host_range((void *)(uintptr_t)address, bytes);
}

static int run_launch(op *work)
{
    if (fault_to_inject != 0) {
        const int fault = fault_to_inject;
        fault_to_inject = 0;
        return fault;
    }
    void *params[MAX_ARGS];
    for (int i = 0; i < work->kernel->arg_count; ++i)
        params[i] = &work->args[i];
    return work->kernel->run(params, work->grid, work->block);
}

/* Runs one piece of work; a failure is the device's sticky error from then on. */
static void run(fake_stream *stream, op *work)
{
    int result = 0;
    running_sequence = work->sequence;
    if (fake_device_lost(stream->device) == 0) {
        switch (work->kind) {
        case OP_COPY:
            memmove(device_or_host(work->dst, work->bytes),
                    work->staged != NULL ? work->staged : device_or_host(work->src, work->bytes), work->bytes);
            break;
        case OP_COPY_2D:
            for (size_t row = 0; row < work->height; ++row)
                memmove(device_or_host(work->dst + row * work->dst_pitch, work->bytes),
                        device_or_host(work->src + row * work->src_pitch, work->bytes), work->bytes);
            break;
        case OP_MEMSET: memset(device_or_host(work->dst, work->bytes), work->value, work->bytes); break;
        case OP_LAUNCH: result = run_launch(work); break;
        case OP_CALL: result = work->call(work->payload); break;
        case OP_ALLOC: fake_allocation_ready(work->dst); break;
        case OP_FREE: fake_allocation_free(work->dst); break;
        case OP_MARK: break;
        }
        if (result != 0)
            fake_device_fault(stream->device, result);
    }
    running_sequence = UINT64_MAX;
    stream->completed = work->number;
    free(work->staged);
    free(work->payload);
    free(work->deps);
    free(work);
}

/* Marks, in each stream's `needed`, the work that must run for `stream` to reach `number`: its
 * own earlier work and, transitively, what that depends on. */
static void mark_needed(fake_stream *stream, uint64_t number)
{
    stream->needed = number > stream->needed ? number : stream->needed;
    for (bool changed = true; changed;) {
        changed = false;
        for (fake_stream *s = streams; s != NULL; s = s->next_stream)
            for (op *work = s->head; work != NULL && work->number <= s->needed; work = work->next)
                for (size_t i = 0; i < work->dep_count; ++i) {
                    fake_stream *other = work->deps[i].stream;
                    if (work->deps[i].number > other->needed) {
                        other->needed = work->deps[i].number;
                        changed = true;
                    }
                }
    }
}

/* A stream whose next piece of work is needed and ready: in deferred mode a random one, so any
 * order the dependencies allow can happen; otherwise the first. */
static fake_stream *pick(void)
{
    fake_stream *candidates[64];
    int count = 0;
    for (fake_stream *s = streams; s != NULL; s = s->next_stream)
        if (s->head != NULL && s->head->number <= s->needed && ready(s->head)) {
            if (count == (int)(sizeof candidates / sizeof candidates[0]))
                break;
            candidates[count++] = s;
        }
    if (count == 0)
        return NULL;
    return candidates[fake_deferred() ? fake_random() % (uint64_t)count : 0];
}

/* Runs what `stream` needs to reach `number`: all of it, or (steps > 0) at most that many pieces
 * of it. Work that cannot start (held) stays queued; `must` makes that an error of the test, as a
 * host that waits for it would wait forever. */
static void run_needed(fake_stream *stream, uint64_t number, bool must, int steps)
{
    if (stream->completed >= number)
        return;
    mark_needed(stream, number);
    for (fake_stream *next; (steps == 0 || steps-- > 0) && (next = pick()) != NULL;) {
        op *work = next->head;
        next->head = work->next;
        if (next->head == NULL)
            next->tail = NULL;
        run(next, work);
    }
    for (fake_stream *s = streams; s != NULL; s = s->next_stream)
        s->needed = 0;
    if (must && stream->completed < number)
        fake_violation("a wait for queued work never ends: what it waits for can never start (a collective whose "
                       "peers never come, or a dependency that is never met)");
}

static void run_until(fake_stream *stream, uint64_t number)
{
    run_needed(stream, number, true, 0);
}

int fake_run_device(int device)
{
    fake_lock();
    for (fake_stream *s = streams; s != NULL; s = s->next_stream)
        if ((device < 0 || s->device == device) && s->queued > s->completed)
            run_until(s, s->queued);
    fake_pools_synchronised(device);
    return fake_unlock(device < 0 ? 0 : fake_device_lost(device));
}

/* ---- queueing work --------------------------------------------------------------------------------- */

static op *new_op(op_kind kind)
{
    op *work = calloc(1, sizeof *work);
    if (work == NULL)
        fake_violation("no memory to queue work");
    work->kind = kind;
    return work;
}

/* Appends work with the legacy stream's rules, then runs it at once in immediate mode or when
 * `wait` asks. Returns the device's sticky error, or 0. Called with the lock held. */
static int queue(fake_stream *stream, op *work, bool wait)
{
    work->number = ++stream->queued;
    work->sequence = fake_next_sequence();
    add_dependency(work, stream, work->number - 1);
    if (stream->legacy) {
        for (fake_stream *s = streams; s != NULL; s = s->next_stream)
            if (s != stream && s->device == stream->device && s->blocking)
                add_dependency(work, s, s->queued);
    } else if (stream->blocking) {
        fake_stream *legacy = &legacy_streams[stream->device];
        add_dependency(work, legacy, legacy->queued);
    }
    if (stream->tail != NULL)
        stream->tail->next = work;
    else
        stream->head = work;
    stream->tail = work;
    /* In immediate mode work runs when queued, unless something before it is held. */
    if (wait || !fake_deferred())
        run_needed(stream, work->number, wait, 0);
    return fake_device_lost(stream->device);
}

int fake_queue_copy(fake_stream *stream, uint64_t dst, uint64_t src, size_t bytes, bool wait)
{
    op *work = new_op(OP_COPY);
    work->dst = dst;
    work->src = src;
    work->bytes = bytes;
    /* Pageable host memory is staged when the copy is queued, as the driver does; pinned memory
     * is read when the copy runs. */
    if (src < FAKE_DEVICE_TAG && !fake_is_pinned((void *)(uintptr_t)src, bytes)) {
        work->staged = malloc(bytes > 0 ? bytes : 1);
        if (work->staged == NULL)
            fake_violation("no memory to stage a copy");
        memcpy(work->staged, (void *)(uintptr_t)src, bytes);
    }
    fake_lock();
    return fake_unlock(queue(stream, work, wait));
}

int fake_queue_copy_2d(fake_stream *stream, uint64_t dst, size_t dst_pitch, uint64_t src, size_t src_pitch,
                       size_t width, size_t height)
{
    op *work = new_op(OP_COPY_2D);
    work->dst = dst;
    work->src = src;
    work->bytes = width;
    work->dst_pitch = dst_pitch;
    work->src_pitch = src_pitch;
    work->height = height;
    fake_lock();
    return fake_unlock(queue(stream, work, false));
}

int fake_queue_memset(fake_stream *stream, uint64_t dst, unsigned char value, size_t bytes)
{
    op *work = new_op(OP_MEMSET);
    work->dst = dst;
    work->value = value;
    work->bytes = bytes;
    fake_lock();
    return fake_unlock(queue(stream, work, false));
}

int fake_queue_launch(fake_stream *stream, const fake_kernel *kernel, void **params, unsigned int grid,
                      unsigned int block)
{
    if (kernel->arg_count > MAX_ARGS)
        return FAKE_INVALID_VALUE;
    op *work = new_op(OP_LAUNCH);
    work->kernel = kernel;
    work->grid = grid;
    work->block = block;
    /* Every parameter of the generated kernels is 8 bytes (int64_t, double or a pointer); the
     * values are read now, as cuLaunchKernel does. */
    for (int i = 0; i < kernel->arg_count; ++i)
        memcpy(&work->args[i], params[i], sizeof work->args[i]);
    fake_lock();
    return fake_unlock(queue(stream, work, false));
}

int fake_queue_alloc(fake_stream *stream, uint64_t address)
{
    op *work = new_op(OP_ALLOC);
    work->dst = address;
    fake_lock();
    return fake_unlock(queue(stream, work, false));
}

int fake_queue_free(fake_stream *stream, uint64_t address)
{
    op *work = new_op(OP_FREE);
    work->dst = address;
    fake_lock();
    return fake_unlock(queue(stream, work, false));
}

static int queue_call(void *stream_handle, fake_call_fn call, void *payload, const uint64_t *addresses,
                      int address_count, bool wait, const int *hold)
{
    fake_lock();
    fake_stream *stream = fake_find_stream(stream_handle);
    if (stream == NULL || address_count > 4) {
        free(payload);
        return fake_unlock(FAKE_INVALID_HANDLE);
    }
    op *work = new_op(OP_CALL);
    work->call = call;
    work->payload = payload;
    work->address_count = address_count;
    work->hold = hold;
    memcpy(work->addresses, addresses, (size_t)address_count * sizeof *addresses);
    return fake_unlock(queue(stream, work, wait));
}

FAKE_API int fake_queue_call(void *stream_handle, fake_call_fn call, void *payload, const uint64_t *addresses,
                             int address_count, bool wait)
{
    return queue_call(stream_handle, call, payload, addresses, address_count, wait, NULL);
}

FAKE_API int fake_queue_held_call(void *stream_handle, fake_call_fn call, void *payload, const uint64_t *addresses,
                                  int address_count, const int *hold)
{
    return queue_call(stream_handle, call, payload, addresses, address_count, false, hold);
}

/* ---- what queued work touches ------------------------------------------------------------------- */

static bool touches(const op *work, uint64_t address, size_t bytes, char *what, size_t size)
{
    switch (work->kind) {
    case OP_COPY:
    case OP_MEMSET:
        if (fake_ranges_overlap(work->dst, work->bytes, address, bytes) ||
            (work->kind == OP_COPY && work->staged == NULL && fake_ranges_overlap(work->src, work->bytes, address, bytes))) {
            snprintf(what, size, "a %s of %zu bytes", work->kind == OP_COPY ? "copy" : "memset", work->bytes);
            return true;
        }
        return false;
    case OP_COPY_2D: {
        const size_t span = (work->height - 1) * (work->dst_pitch > work->src_pitch ? work->dst_pitch : work->src_pitch) +
                            work->bytes;
        if (fake_ranges_overlap(work->dst, span, address, bytes) || fake_ranges_overlap(work->src, span, address, bytes)) {
            snprintf(what, size, "a 2D copy of %zu rows", work->height);
            return true;
        }
        return false;
    }
    case OP_LAUNCH:
        /* A pointer argument inside the range: the kernel may touch it. */
        for (int i = 0; i < work->kernel->arg_count; ++i)
            if (work->args[i] >= address && work->args[i] - address < bytes) {
                snprintf(what, size, "the kernel %s", work->kernel->name);
                return true;
            }
        return false;
    case OP_CALL:
        for (int i = 0; i < work->address_count; ++i)
            if (work->addresses[i] >= address && work->addresses[i] - address < bytes) {
                snprintf(what, size, "a cuBLAS call");
                return true;
            }
        return false;
    default: return false;
    }
}

bool fake_queued_work_touches(uint64_t address, size_t bytes, char *what, size_t size)
{
    fake_lock();
    for (fake_stream *s = streams; s != NULL; s = s->next_stream)
        for (const op *work = s->head; work != NULL; work = work->next)
            if (touches(work, address, bytes, what, size))
                return fake_unlock(true);
    return fake_unlock(false);
}

static uint64_t count_pending(bool copies_only)
{
    uint64_t pending = 0;
    fake_lock();
    for (fake_stream *s = streams; s != NULL; s = s->next_stream)
        for (const op *work = s->head; work != NULL; work = work->next)
            pending += !copies_only || work->kind == OP_COPY || work->kind == OP_COPY_2D;
    fake_unlock(0);
    return pending;
}

FAKE_API uint64_t fake_cuda_pending_copies(void)
{
    return count_pending(true);
}

FAKE_API uint64_t fake_cuda_pending_work(void)
{
    return count_pending(false);
}

/* ---- synchronisation and events ------------------------------------------------------------------ */

/* A mark queued on the stream: everything queued before it (and, on the legacy stream, on every
 * blocking stream) is what a wait on it waits for. */
static uint64_t mark(fake_stream *stream, fake_stream *waits_for, uint64_t number)
{
    op *work = new_op(OP_MARK);
    if (waits_for != NULL)
        add_dependency(work, waits_for, number);
    queue(stream, work, false); /* which, in immediate mode, may already have run and freed it */
    return stream->queued;
}

FAKE_API cbcu_result cuStreamSynchronize(cbcu_stream handle)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    fake_lock();
    fake_stream *stream = fake_find_stream(handle);
    if (stream == NULL)
        return fake_unlock(CBCU_ERROR_INVALID_HANDLE);
    run_until(stream, mark(stream, NULL, 0));
    fake_pools_synchronised(stream->device);
    return fake_unlock(fake_device_lost(stream->device));
}

FAKE_API cbcu_result cuCtxSynchronize(void)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    fake_lock();
    fake_counters.device_syncs++;
    return fake_unlock(fake_run_device(fake_current_device()));
}

FAKE_API cbcu_result cuEventCreate(cbcu_event *event, unsigned int flags)
{
    (void)flags;
    if (event == NULL)
        return CBCU_ERROR_INVALID_VALUE;
    const int status = fake_context_status();
    if (status != 0)
        return status;
    fake_event *made = calloc(1, sizeof *made);
    if (made == NULL)
        return CBCU_ERROR_OUT_OF_MEMORY;
    *event = (cbcu_event)made;
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuEventDestroy_v2(cbcu_event event)
{
    free(event);
    return event != NULL ? CBCU_SUCCESS : CBCU_ERROR_INVALID_HANDLE;
}

FAKE_API cbcu_result cuEventRecord(cbcu_event handle, cbcu_stream stream_handle)
{
    fake_event *event = (fake_event *)handle;
    const int status = fake_context_status();
    if (status != 0)
        return status;
    fake_lock();
    fake_stream *stream = fake_find_stream(stream_handle);
    if (stream == NULL || event == NULL)
        return fake_unlock(CBCU_ERROR_INVALID_HANDLE);
    event->number = mark(stream, NULL, 0);
    event->stream = stream;
    return fake_unlock(fake_device_lost(stream->device));
}

/* The stream's later work waits for what the event captured when it was last recorded. */
FAKE_API cbcu_result cuStreamWaitEvent(cbcu_stream stream_handle, cbcu_event handle, unsigned int flags)
{
    const fake_event *event = (const fake_event *)handle;
    const int status = fake_context_status();
    if (status != 0)
        return status;
    fake_lock();
    fake_stream *stream = fake_find_stream(stream_handle);
    if (stream == NULL || event == NULL || flags != 0)
        return fake_unlock(stream == NULL || event == NULL ? CBCU_ERROR_INVALID_HANDLE : CBCU_ERROR_INVALID_VALUE);
    fake_counters.stream_waits++;
    if (event->stream != NULL)
        mark(stream, event->stream, event->number);
    return fake_unlock(fake_device_lost(stream->device));
}

FAKE_API cbcu_result cuEventSynchronize(cbcu_event handle)
{
    const fake_event *event = (const fake_event *)handle;
    if (event == NULL)
        return CBCU_ERROR_INVALID_HANDLE;
    fake_lock();
    if (event->stream == NULL)
        return fake_unlock(CBCU_SUCCESS);
    run_until(event->stream, event->number);
    fake_pools_synchronised(event->stream->device);
    return fake_unlock(fake_device_lost(event->stream->device));
}

/* A GPU works while the host polls: a query runs one to three pieces of what the event waits for
 * (deferred mode; immediate mode has run it all), so polling finishes, after a random number of
 * queries. */
FAKE_API cbcu_result cuEventQuery(cbcu_event handle)
{
    const fake_event *event = (const fake_event *)handle;
    if (event == NULL)
        return CBCU_ERROR_INVALID_HANDLE;
    fake_lock();
    fake_counters.event_queries++;
    if (event->stream == NULL)
        return fake_unlock(CBCU_SUCCESS);
    run_needed(event->stream, event->number, false, 1 + (int)(fake_random() % 3));
    if (event->stream->completed < event->number)
        return fake_unlock(FAKE_NOT_READY);
    return fake_unlock(fake_device_lost(event->stream->device));
}
