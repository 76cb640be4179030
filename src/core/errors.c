/* SPDX-License-Identifier: BSD-2-Clause */
/* The public face of the error core (src/util/status.c): the thread's last failure, whole and in
 * its parts. */
#include "status.h"

CBLOB_API const char *cblob_last_error_message(void)
{
    return cb_last_error_message();
}

CBLOB_API const char *cblob_last_error_function(void)
{
    return cb_last_error_function();
}

CBLOB_API const char *cblob_last_error_detail(void)
{
    return cb_last_error_detail();
}
