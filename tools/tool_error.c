/* SPDX-License-Identifier: BSD-2-Clause */
/* The program's last error. src/io (compiled into the program: the library keeps it hidden)
 * reports failures through cb_fail, the one core function it calls; the program defines it here
 * and reports its own failures, and the library's it passes on, the same way. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "status.h"
#include "tool.h"

static char last_error[4096];

cblob_status cb_fail(cblob_status status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return status;
}

const char *tool_error(void)
{
    return last_error;
}

cblob_status tool_library_error(cblob_status status, const char *subject)
{
    const char *message = cblob_last_error_message();
    /* "cblob_model_open_file: x.caffemodel: truncated" reads as "x.caffemodel: truncated". */
    const char *colon = strstr(message, ": ");
    if (strncmp(message, "cblob_", 6) == 0 && colon != NULL)
        message = colon + 2;
    const size_t length = strlen(subject);
    if (strncmp(message, subject, length) == 0 && (message[length] == ':' || message[length] == ' '))
        return cb_fail(status, "%s", message);
    return cb_fail(status, "%s: %s", subject, message);
}
