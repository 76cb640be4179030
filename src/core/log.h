/* SPDX-License-Identifier: BSD-2-Clause */
/* A context's log: warnings the library meets on a caller's behalf that are not errors of the
 * call (cblob_context_log). Bounded: the oldest lines go first. */
#ifndef CBLOB_SRC_LOG_H
#define CBLOB_SRC_LOG_H

#include <pthread.h>
#include <stddef.h>

#include "backend.h"

#define CB_LOG_BYTES 8192

struct cb_log {
    pthread_mutex_t lock; /* blobs of one context may log from several threads */
    size_t length;
    char text[CB_LOG_BYTES];
};

void cb_log_init(cb_log *log);
void cb_log_destroy(cb_log *log);
/* Copies the log (NUL-terminated, cut to size) and returns its full length. */
size_t cb_log_read(cb_log *log, char *text, size_t size);
void cb_log_clear(cb_log *log);

#endif
