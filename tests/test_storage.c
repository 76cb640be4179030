/* SPDX-License-Identifier: BSD-2-Clause */
/* Storage (src/core/storage.c) below the blob: caller buffers on the host and on a device, with
 * a device that no backend stands behind, since a caller's device buffer is never touched when
 * it is let go of. */
#include "harness.h"
#include "storage.h"

typedef struct release_log {
    int calls;
    void *last_ptr;
} release_log;

static void count_release(void *ptr, void *user_data)
{
    release_log *log = user_data;
    ++log->calls;
    log->last_ptr = ptr;
}

typedef void (*set_buffer_fn)(cb_storage *storage, void *ptr, cb_release release);

static void set_host(cb_storage *storage, void *ptr, cb_release release)
{
    cb_storage_set_cpu(storage, ptr, release);
}

static void set_device(cb_storage *storage, void *ptr, cb_release release)
{
    const cb_device device = {.backend = NULL, .index = 0, .stream = NULL, .log = NULL};
    cb_storage_set_gpu(storage, &device, ptr, release);
}

/* One buffer handed over twice: with the same callback and user_data it is one hand-over; with
 * another user_data the first ends there, and each callback runs once. */
static void each_hand_over_is_released_once(set_buffer_fn set)
{
    static char buffer[64];
    release_log first = {0, NULL}, second = {0, NULL};
    cb_storage *storage;
    CHECK_OK(cb_storage_create(sizeof buffer, &storage));
    set(storage, buffer, (cb_release){count_release, &first});
    set(storage, buffer, (cb_release){count_release, &first});
    CHECK_EQ_INT(first.calls, 0);
    set(storage, buffer, (cb_release){count_release, &second});
    CHECK_EQ_INT(first.calls, 1);
    CHECK(first.last_ptr == buffer);
    CHECK_EQ_INT(second.calls, 0);
    cb_storage_release(storage);
    CHECK_EQ_INT(first.calls, 1);
    CHECK_EQ_INT(second.calls, 1);
    CHECK(second.last_ptr == buffer);
}

TEST(host_buffer_handed_over_again_with_another_release)
{
    each_hand_over_is_released_once(set_host);
}

TEST(device_buffer_handed_over_again_with_another_release)
{
    each_hand_over_is_released_once(set_device);
}
