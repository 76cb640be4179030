/* SPDX-License-Identifier: BSD-2-Clause */
/* The error core (src/util): the thread's last failure, kept as its parts. The function that
 * failed is data beside the text, never parsed out of it (src/core/errors.c hands both out). */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

_Thread_local cb_call cb_current_call CB_TLS_MODEL;

/* The whole message is "<function>: <detail>": the function's name and ": " come first, so the
 * message and the detail are one buffer (the detail starts at detail_start). Long enough for a
 * full shape string plus context; longer messages are cut, never overflowed. */
static _Thread_local cb_saved_error last_error;

cblob_status cb_fail(cblob_status status, const char *format, ...)
{
    const char *function = cb_current_call.function ? cb_current_call.function : "";
    int prefix = function[0] != '\0' ? snprintf(last_error.text, sizeof last_error.text, "%s: ", function) : 0;
    if (prefix < 0 || (size_t)prefix >= sizeof last_error.text || (size_t)prefix - 2 >= sizeof last_error.function)
        prefix = 0;
    memcpy(last_error.function, function, prefix > 0 ? (size_t)prefix - 2 : 0);
    last_error.function[prefix > 0 ? prefix - 2 : 0] = '\0';
    last_error.detail_start = (size_t)prefix;
    va_list args;
    va_start(args, format);
    vsnprintf(last_error.text + prefix, sizeof last_error.text - (size_t)prefix, format, args);
    va_end(args);
    return status;
}

void cb_error_save(cb_saved_error *saved)
{
    *saved = last_error;
}

void cb_error_restore(const cb_saved_error *saved)
{
    last_error = *saved;
}

const char *cb_last_error_message(void)
{
    return last_error.text;
}

const char *cb_last_error_function(void)
{
    return last_error.function;
}

const char *cb_last_error_detail(void)
{
    return last_error.text + last_error.detail_start;
}

cblob_status cb_fail_part(cblob_part part)
{
    return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "part %d is neither CBLOB_PART_DATA (0) nor CBLOB_PART_DIFF (1)",
                   (int)part);
}

cblob_status cb_check_bool(const char *name, int32_t value)
{
    if (value != 0 && value != 1)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "%s is %d; booleans are 0 or 1", name, (int)value);
    return CBLOB_OK;
}

cblob_status cb_return_text(const char *text, char *buffer, size_t buffer_size, size_t *out_length)
{
    CB_REQUIRE(out_length);
    if (buffer == NULL && buffer_size > 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "buffer is NULL but buffer_size is %zu", buffer_size);
    const size_t length = strlen(text);
    if (buffer != NULL && buffer_size <= length)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "a buffer of %zu bytes cannot hold the %zu characters and the NUL",
                       buffer_size, length);
    if (buffer != NULL)
        memcpy(buffer, text, length + 1);
    *out_length = length;
    return CBLOB_OK;
}
