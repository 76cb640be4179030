/* SPDX-License-Identifier: BSD-2-Clause */
/* The test double's memory: device allocations (host memory at FAKE_DEVICE_TAG), pinned host
 * allocations (also mapped at FAKE_DEVICE_TAG, as unified addressing maps them), memory pools, and
 * the ranges tests handed back to their owners. Enqueue-time checks answer yes or no;
 * execution-time checks end the process on a misuse (fake_violation).
 *
 * Pools are hostile as a GPU's are: a block freed with cuMemFreeAsync goes back to its pool when
 * the free's turn comes, and the next allocation from that pool that fits takes it (the most
 * recently freed first), whatever stream asks; at each synchronisation a pool gives the driver
 * back what it holds above its release threshold (0 for a device's default pool). Every
 * allocation is born at a point of the double's sequence of queued work, so work queued before
 * the memory it touches was handed out (to its previous owner: the work's stream was not ordered
 * before the free) is caught when it runs, even where the block is live again. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "fake_cuda_internal.h"

#define PINNED_HEADER 64
#define DEVICE_ALIGNMENT 256

typedef struct allocation {
    unsigned char *host;
    size_t size;      /* asked for */
    size_t room;      /* the block's bytes (a reused block may be larger than asked) */
    int device;       /* -1: pinned host memory */
    bool ready;       /* false from cuMemAllocAsync until its turn in the stream */
    bool free_queued; /* cuMemFreeAsync was called: nothing may use it from now on */
    fake_pool *pool;  /* where the block goes back when freed; NULL: cuMemAlloc or pinned */
    uint64_t born;    /* the point of the work sequence when it was handed out */
} allocation;

typedef struct pooled_block {
    unsigned char *host;
    size_t room;
} pooled_block;

struct fake_pool {
    int device;
    uint64_t release_threshold; /* bytes the pool keeps at a synchronisation */
    uint64_t reserved;          /* bytes of its blocks, in use or free */
    pooled_block *free_blocks;  /* freed, their frees run: handed out again first, last in first */
    size_t free_count, free_room;
    bool destroyed;
    fake_pool *next;
};

typedef struct range {
    uintptr_t start;
    size_t bytes;
} range;

static allocation *allocations;
static size_t allocation_count, allocation_room;
static range *given_back;
static size_t given_back_count, given_back_room;
static uint64_t device_bytes[FAKE_MAX_DEVICES]; /* reserved: live allocations and pooled blocks */
static uint64_t memory_per_device = (uint64_t)1 << 30;
static fake_pool *pools; /* every pool made, default pools first */
static fake_pool default_pools[FAKE_MAX_DEVICES];

void fake_violation(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("fake_cuda: error of the test (a real GPU would corrupt memory silently here): ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    fflush(stderr);
    abort();
}

bool fake_ranges_overlap(uint64_t a, size_t a_bytes, uint64_t b, size_t b_bytes)
{
    return a < b + b_bytes && b < a + a_bytes;
}

static bool inside(const allocation *a, uintptr_t host, size_t bytes)
{
    const uintptr_t start = (uintptr_t)a->host;
    return host >= start && host - start <= a->size && bytes <= a->size - (host - start);
}

static allocation *find(uintptr_t host, size_t bytes, bool pinned)
{
    for (size_t i = 0; i < allocation_count; ++i)
        if ((allocations[i].device < 0) == pinned && inside(&allocations[i], host, bytes))
            return &allocations[i];
    return NULL;
}

/* The allocation a device address falls in: device memory, or pinned memory seen through its
 * device mapping. */
static allocation *find_device(uint64_t address, size_t bytes)
{
    if (address < FAKE_DEVICE_TAG)
        return NULL;
    const uintptr_t host = (uintptr_t)(address - FAKE_DEVICE_TAG);
    allocation *a = find(host, bytes, false);
    return a != NULL ? a : find(host, bytes, true);
}

static bool add(unsigned char *host, size_t size, size_t room, int device, bool ready, fake_pool *pool)
{
    if (allocation_count == allocation_room) {
        const size_t grown_room = allocation_room ? 2 * allocation_room : 64;
        allocation *grown = realloc(allocations, grown_room * sizeof *grown);
        if (grown == NULL)
            return false;
        allocations = grown;
        allocation_room = grown_room;
    }
    allocations[allocation_count++] = (allocation){host, size, room, device, ready, false, pool, fake_next_sequence()};
    return true;
}

/* Handed-back ranges inside memory that is freed now are the memory's business no more. */
static void forget_given_back(const allocation *a)
{
    for (size_t i = 0; i < given_back_count;)
        if (inside(a, given_back[i].start, given_back[i].bytes) ||
            inside(a, given_back[i].start - FAKE_DEVICE_TAG, given_back[i].bytes))
            given_back[i] = given_back[--given_back_count];
        else
            ++i;
}

static void drop(allocation *a)
{
    forget_given_back(a);
    *a = allocations[--allocation_count];
}

static void check_not_given_back(uint64_t address, size_t bytes, const char *what)
{
    for (size_t i = 0; i < given_back_count; ++i)
        if (fake_ranges_overlap(address, bytes, given_back[i].start, given_back[i].bytes))
            fake_violation("%s touches [%#llx, +%zu), which was handed back to its owner at %#llx (%zu bytes)", what,
                           (unsigned long long)address, bytes, (unsigned long long)given_back[i].start,
                           given_back[i].bytes);
}

/* ---- knobs and control ------------------------------------------------------------------------ */

void fake_memory_configure(uint64_t bytes_per_device)
{
    memory_per_device = bytes_per_device;
}

FAKE_API void fake_cuda_set_memory(uint64_t bytes_per_device)
{
    fake_lock();
    memory_per_device = bytes_per_device;
    fake_unlock(0);
}

FAKE_API void fake_cuda_give_back(const void *ptr, size_t bytes)
{
    fake_lock();
    char what[160];
    if (fake_queued_work_touches((uint64_t)(uintptr_t)ptr, bytes, what, sizeof what))
        fake_violation("[%p, +%zu) was handed back to its owner while %s, still queued, touches it", ptr, bytes, what);
    if (given_back_count == given_back_room) {
        const size_t room = given_back_room ? 2 * given_back_room : 16;
        range *grown = realloc(given_back, room * sizeof *grown);
        if (grown == NULL)
            fake_violation("no memory to record a handed-back range");
        given_back = grown;
        given_back_room = room;
    }
    given_back[given_back_count++] = (range){(uintptr_t)ptr, bytes};
    fake_unlock(0);
}

/* ---- enqueue-time and execution-time checks --------------------------------------------------- */

bool fake_is_device_range(uint64_t address, size_t bytes)
{
    fake_lock();
    const allocation *a = find_device(address, bytes);
    return fake_unlock(a != NULL && !a->free_queued);
}

bool fake_is_pinned(const void *host, size_t bytes)
{
    fake_lock();
    return fake_unlock(find((uintptr_t)host, bytes, true) != NULL);
}

FAKE_API void *fake_device_range(const void *device_ptr, size_t bytes)
{
    const uint64_t address = (uint64_t)(uintptr_t)device_ptr;
    fake_lock();
    const allocation *a = find_device(address, bytes);
    if (a == NULL)
        fake_violation("device range [%#llx, +%zu) is not inside a live allocation: it was freed before this work ran",
                       (unsigned long long)address, bytes);
    if (a->born > fake_running_sequence())
        fake_violation("device range [%#llx, +%zu) was freed and handed out again before this work, queued while the "
                       "memory had its previous owner, ran: the work's stream is not ordered before the free",
                       (unsigned long long)address, bytes);
    if (!a->ready)
        fake_violation("device range [%#llx, +%zu) is used before its stream-ordered allocation ran: the work's "
                       "stream does not wait for the allocating stream",
                       (unsigned long long)address, bytes);
    check_not_given_back(address, bytes, "work running now");
    fake_unlock(0);
    return (void *)(uintptr_t)(address - FAKE_DEVICE_TAG);
}

void *fake_host_range(const void *host, size_t bytes)
{
    fake_lock();
    check_not_given_back((uint64_t)(uintptr_t)host, bytes, "a copy running now");
    fake_unlock(0);
    return (void *)host;
}

/* ---- allocation calls ---------------------------------------------------------------------------- */

/* A freed block of the pool that holds `bytes`, taken off its free list: the most recently freed. */
static bool take_block(fake_pool *pool, size_t bytes, pooled_block *out)
{
    for (size_t i = pool->free_count; i-- > 0;)
        if (pool->free_blocks[i].room >= bytes) {
            *out = pool->free_blocks[i];
            pool->free_blocks[i] = pool->free_blocks[--pool->free_count];
            return true;
        }
    return false;
}

int fake_device_alloc(int device, size_t bytes, bool ready, fake_pool *pool, uint64_t *out)
{
    fake_lock();
    pooled_block reused;
    if (pool != NULL && take_block(pool, bytes, &reused)) {
        if (!add(reused.host, bytes, reused.room, device, ready, pool))
            return fake_unlock(FAKE_OUT_OF_MEMORY);
        /* What the previous owner left: a missing zero-fill shows. */
        memset(reused.host, 0x5A, bytes);
        fake_counters.pool_reuses++;
        fake_counters.device_bytes_in_use += bytes;
        *out = (uint64_t)((uintptr_t)reused.host + FAKE_DEVICE_TAG);
        return fake_unlock(0);
    }
    const size_t room = bytes;
    if (device_bytes[device] + room > memory_per_device)
        return fake_unlock(FAKE_OUT_OF_MEMORY);
    /* Aligned as cuMemAlloc's (256 bytes), so that kernels' vector paths are the ones a GPU takes. */
    unsigned char *host = aligned_alloc(DEVICE_ALIGNMENT, (bytes + DEVICE_ALIGNMENT - 1) / DEVICE_ALIGNMENT * DEVICE_ALIGNMENT);
    if (host == NULL || !add(host, bytes, room, device, ready, pool)) {
        free(host);
        return fake_unlock(FAKE_OUT_OF_MEMORY);
    }
    /* Fresh device memory holds garbage, which a missing zero-fill would show. */
    memset(host, 0xA5, bytes);
    device_bytes[device] += room;
    if (pool != NULL)
        pool->reserved += room;
    fake_counters.device_allocs++;
    fake_counters.device_bytes_in_use += bytes;
    *out = (uint64_t)((uintptr_t)host + FAKE_DEVICE_TAG);
    return fake_unlock(0);
}

/* The allocation that starts exactly at a device address, or NULL. */
static allocation *device_allocation_at(uint64_t address)
{
    allocation *a = address >= FAKE_DEVICE_TAG ? find((uintptr_t)(address - FAKE_DEVICE_TAG), 0, false) : NULL;
    return a != NULL && (uint64_t)(uintptr_t)a->host + FAKE_DEVICE_TAG == address ? a : NULL;
}

/* cuMemFreeAsync's check when queued: the start of a live allocation, freed once. */
int fake_device_free_queued(uint64_t address)
{
    fake_lock();
    allocation *a = device_allocation_at(address);
    if (a == NULL || a->free_queued)
        return fake_unlock(FAKE_INVALID_VALUE);
    a->free_queued = true;
    fake_counters.device_frees++; /* counted when asked for, as cuMemFree's are */
    return fake_unlock(0);
}

void fake_allocation_ready(uint64_t address)
{
    fake_lock();
    allocation *a = device_allocation_at(address);
    if (a != NULL)
        a->ready = true;
    fake_unlock(0);
}

/* A block back on its pool's free list. */
static void pool_keep(fake_pool *pool, unsigned char *host, size_t room)
{
    if (pool->free_count == pool->free_room) {
        const size_t grown_room = pool->free_room ? 2 * pool->free_room : 16;
        pooled_block *grown = realloc(pool->free_blocks, grown_room * sizeof *grown);
        if (grown == NULL)
            fake_violation("no memory for a pool's free list");
        pool->free_blocks = grown;
        pool->free_room = grown_room;
    }
    pool->free_blocks[pool->free_count++] = (pooled_block){host, room};
}

static void give_to_driver(fake_pool *pool, pooled_block b)
{
    free(b.host);
    device_bytes[pool->device] -= b.room;
    pool->reserved -= b.room;
    fake_counters.pool_releases++;
}

void fake_allocation_free(uint64_t address)
{
    fake_lock();
    allocation *a = device_allocation_at(address);
    if (a == NULL)
        fake_violation("device memory at %#llx is freed twice", (unsigned long long)address);
    fake_counters.device_bytes_in_use -= a->size;
    if (a->pool != NULL && !a->pool->destroyed) {
        pool_keep(a->pool, a->host, a->room);
    } else {
        device_bytes[a->device] -= a->room;
        if (a->pool != NULL)
            a->pool->reserved -= a->room;
        free(a->host);
    }
    drop(a);
    fake_unlock(0);
}

/* Gives the driver back free blocks of the pool while it holds more than `keep` bytes. */
static void pool_shrink(fake_pool *pool, uint64_t keep)
{
    while (pool->free_count > 0 && pool->reserved > keep)
        give_to_driver(pool, pool->free_blocks[--pool->free_count]);
}

/* ---- pools ------------------------------------------------------------------------------------- */

void fake_pools_configure(int device_count)
{
    pools = NULL;
    for (int d = device_count; d-- > 0;) {
        default_pools[d] = (fake_pool){.device = d, .next = pools};
        pools = &default_pools[d];
    }
}

fake_pool *fake_default_pool(int device)
{
    return &default_pools[device];
}

void fake_pools_synchronised(int device)
{
    fake_lock();
    for (fake_pool *pool = pools; pool != NULL; pool = pool->next)
        if (device < 0 || pool->device == device)
            pool_shrink(pool, pool->release_threshold);
    fake_unlock(0);
}

int fake_pool_create(int device, fake_pool **out)
{
    fake_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return FAKE_OUT_OF_MEMORY;
    fake_lock();
    pool->device = device;
    /* After the default pools, which stay first. */
    fake_pool **at = &pools;
    while (*at != NULL)
        at = &(*at)->next;
    *at = pool;
    fake_counters.pools_created++;
    *out = pool;
    return fake_unlock(0);
}

bool fake_pool_known(const fake_pool *pool)
{
    fake_lock();
    for (const fake_pool *p = pools; p != NULL; p = p->next)
        if (p == pool && !p->destroyed)
            return fake_unlock(true);
    return fake_unlock(false);
}

int fake_pool_device(const fake_pool *pool)
{
    return pool->device;
}

void fake_pool_set_release_threshold(fake_pool *pool, uint64_t bytes)
{
    fake_lock();
    pool->release_threshold = bytes;
    fake_unlock(0);
}

void fake_pool_trim(fake_pool *pool, uint64_t keep)
{
    fake_lock();
    pool_shrink(pool, keep);
    fake_unlock(0);
}

/* Blocks still in use go to the driver when they are freed (the pool record stays: they name it). */
void fake_pool_destroy(fake_pool *pool)
{
    fake_lock();
    pool_shrink(pool, 0);
    pool->destroyed = true;
    fake_unlock(0);
}

int fake_device_free_now(uint64_t address)
{
    fake_lock();
    const allocation *a = device_allocation_at(address);
    if (a == NULL || a->free_queued)
        return fake_unlock(FAKE_INVALID_VALUE);
    fake_counters.device_frees++;
    fake_allocation_free(address);
    return fake_unlock(0);
}

int fake_pinned_alloc(size_t bytes, void **out)
{
    fake_lock();
    /* Offset from what malloc returned, so that free() of it by mistake is caught at once. */
    unsigned char *block = malloc(bytes + PINNED_HEADER);
    if (block == NULL || !add(block + PINNED_HEADER, bytes, bytes, -1, true, NULL)) {
        free(block);
        return fake_unlock(FAKE_OUT_OF_MEMORY);
    }
    fake_counters.pinned_allocs++;
    fake_counters.pinned_bytes_in_use += bytes;
    *out = block + PINNED_HEADER;
    return fake_unlock(0);
}

/* cuMemFreeHost does not wait here for work queued on the memory: the double does not count on a
 * wait the driver does not document, so such work is an error of the caller's. */
int fake_pinned_free(void *ptr)
{
    fake_lock();
    allocation *a = find((uintptr_t)ptr, 0, true);
    if (a == NULL || a->host != ptr)
        return fake_unlock(FAKE_INVALID_VALUE);
    char what[160];
    if (fake_queued_work_touches((uint64_t)(uintptr_t)ptr, a->size, what, sizeof what) ||
        fake_queued_work_touches((uint64_t)(uintptr_t)ptr + FAKE_DEVICE_TAG, a->size, what, sizeof what))
        fake_violation("pinned host memory [%p, +%zu) is freed (cuMemFreeHost) while %s, still queued, touches it", ptr,
                       a->size, what);
    fake_counters.pinned_frees++;
    fake_counters.pinned_bytes_in_use -= a->size;
    free(a->host - PINNED_HEADER);
    drop(a);
    return fake_unlock(0);
}

/* cuPointerGetAttribute's view: device memory only. */
int fake_device_pointer_info(uint64_t address, int *device, uint64_t *start, size_t *size)
{
    fake_lock();
    const allocation *a = address >= FAKE_DEVICE_TAG ? find((uintptr_t)(address - FAKE_DEVICE_TAG), 0, false) : NULL;
    if (a == NULL)
        return fake_unlock(FAKE_INVALID_VALUE);
    *device = a->device;
    *start = (uint64_t)(uintptr_t)a->host + FAKE_DEVICE_TAG;
    *size = a->size;
    return fake_unlock(0);
}
