/* SPDX-License-Identifier: BSD-2-Clause */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

_Thread_local cb_call cb_current_call __attribute__((tls_model("initial-exec")));

/* Long enough for a full shape string plus context; longer messages are cut, never overflowed. */
static _Thread_local char last_error_message[1024];

cblob_status cb_fail(cblob_status status, const char *format, ...)
{
    const char *function = cb_current_call.function ? cb_current_call.function : "cblob";
    int prefix = snprintf(last_error_message, sizeof last_error_message, "%s: ", function);
    if (prefix < 0 || (size_t)prefix >= sizeof last_error_message)
        prefix = 0;
    va_list args;
    va_start(args, format);
    vsnprintf(last_error_message + prefix, sizeof last_error_message - (size_t)prefix, format, args);
    va_end(args);
    return status;
}

void cb_error_save(cb_saved_error *saved)
{
    _Static_assert(sizeof saved->text == sizeof last_error_message, "a saved message holds a whole message");
    memcpy(saved->text, last_error_message, sizeof saved->text);
}

void cb_error_restore(const cb_saved_error *saved)
{
    memcpy(last_error_message, saved->text, sizeof last_error_message);
}

CBLOB_API const char *cblob_last_error_message(void)
{
    return last_error_message;
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
