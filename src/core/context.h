/* SPDX-License-Identifier: BSD-2-Clause */
/* Contexts: the mode (Caffe's per-thread Caffe::mode(), held explicitly here) and the device. */
#ifndef CBLOB_SRC_CONTEXT_H
#define CBLOB_SRC_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "backend.h"
#include "cblob/cblob.h"
#include "log.h"
#include "progress.h"
#include "threads.h"

struct cblob_context {
    atomic_int holders;
    _Atomic cblob_mode mode;
    /* Opened on first GPU use; blobs of one context may do that from several threads at once. */
    pthread_mutex_t device_lock;
    /* Set once, under device_lock, after `device` is filled in; read without the lock by the
     * accessors, which consult it on every host or device access of a blob in GPU mode. */
    atomic_bool device_open;
    cb_device device; /* device.log points at log */
    cb_log log;
    /* Threads work on the context's blobs may use (cblob_context_set_num_threads); 0: the
     * process default. */
    atomic_int num_threads;
    /* cblob_context_set_progress's callback; a call copies both under the lock when it starts. */
    pthread_mutex_t progress_lock;
    cblob_progress_fn progress;
    void *progress_user_data;
};

/* Makes the rest of the current call use the context's thread setting (src/threads). Entry
 * points call it with the context of the blob they write (or read, for sums). */
static inline void cb_context_use_threads(const cblob_context *context)
{
    cb_threads_for_call(atomic_load_explicit(&((cblob_context *)context)->num_threads, memory_order_relaxed));
}

/* Begins the calling thread's progress scope (src/util/progress.h) for a call that reads or writes
 * files for the context: its callback's, or none when it has none or context is NULL. End it with
 * cb_progress_end. */
void cb_context_begin_progress(const cblob_context *context, cb_progress_kind kind, cb_progress *progress);

void cb_context_retain(cblob_context *context);
void cb_context_release(cblob_context *context);

/* The context's device, opening the GPU backend on first use. Fails with the backend's status
 * (no driver, no device, ...) when there is no usable GPU. */
cblob_status cb_context_device(cblob_context *context, const cb_device **out);
/* The same for device `index` (-1: the context's): opens it, or fails with CBLOB_ERR_STATE when
 * the context already has another device open. */
cblob_status cb_context_use_device(cblob_context *context, int32_t index, const cb_device **out);

/* The context's device if it has been opened, else NULL; opens nothing. */
const cb_device *cb_context_open_device(cblob_context *context);

/* Whether host buffers allocated now should be pinned, and the device to pin them with. NULL
 * in CPU mode: pinning is decided at allocation time, as in Caffe. */
const cb_device *cb_context_pinning_device(cblob_context *context);

#endif
