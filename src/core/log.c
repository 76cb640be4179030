/* SPDX-License-Identifier: BSD-2-Clause */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cb_log_init(cb_log *log)
{
    pthread_mutex_init(&log->lock, NULL);
    log->length = 0;
    log->text[0] = '\0';
}

void cb_log_destroy(cb_log *log)
{
    pthread_mutex_destroy(&log->lock);
}

/* Drops whole lines from the front until `needed` more bytes (and the NUL) fit. */
static void make_room(cb_log *log, size_t needed)
{
    size_t drop = 0;
    while (log->length - drop + needed + 1 > CB_LOG_BYTES && drop < log->length) {
        const char *newline = memchr(log->text + drop, '\n', log->length - drop);
        drop = newline != NULL ? (size_t)(newline - log->text) + 1 : log->length;
    }
    memmove(log->text, log->text + drop, log->length - drop + 1);
    log->length -= drop;
}

void cb_log_warning(cb_log *log, const char *format, ...)
{
    if (log == NULL)
        return;
    char line[1024];
    va_list args;
    va_start(args, format);
    int written = vsnprintf(line, sizeof line - 1, format, args);
    va_end(args);
    size_t length = written < 0 ? 0 : (size_t)written < sizeof line - 1 ? (size_t)written : sizeof line - 2;
    line[length++] = '\n';
    line[length] = '\0';
    pthread_mutex_lock(&log->lock);
    make_room(log, length);
    memcpy(log->text + log->length, line, length + 1);
    log->length += length;
    pthread_mutex_unlock(&log->lock);
}

size_t cb_log_read(cb_log *log, char *text, size_t size)
{
    pthread_mutex_lock(&log->lock);
    const size_t length = log->length;
    if (size > 0) {
        const size_t copied = length < size ? length : size - 1;
        memcpy(text, log->text, copied);
        text[copied] = '\0';
    }
    pthread_mutex_unlock(&log->lock);
    return length;
}

void cb_log_clear(cb_log *log)
{
    pthread_mutex_lock(&log->lock);
    log->length = 0;
    log->text[0] = '\0';
    pthread_mutex_unlock(&log->lock);
}
