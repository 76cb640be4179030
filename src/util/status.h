/* SPDX-License-Identifier: BSD-2-Clause */
/* The error core (src/util, shared by the library, cuda/ and libcblob_mpi): the thread-local last
 * error, kept as the function that failed and the detail, and the argument checks every entry
 * point uses. */
#ifndef CBLOB_UTIL_STATUS_H
#define CBLOB_UTIL_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include "cblob/cblob.h"

/* What the current public call is: its name, so that messages name the call the user made however
 * deep inside the library the failure is found, and the threads it may use (src/threads: 0 is
 * the process default, until the call names the context whose setting applies). Every public
 * entry point starts with CB_ENTER(), which sets both. */
typedef struct cb_call {
    const char *function;
    int32_t threads;
} cb_call;
/* initial-exec: one store per call instead of a __tls_get_addr call, which would cost more than a
 * cheap getter itself. Sixteen bytes of static TLS are safe even when cblob is dlopen()ed; the
 * message buffer (status.c) stays in the default model, touched only on failure. */
/* A library that processes load with dlopen beside libcblob (libcblob_mpi, loaded by a binding's
 * FFI) compiles the error core with CB_TLS_DYNAMIC: a module with any initial-exec access puts its
 * whole TLS block in the static TLS glibc keeps in reserve, which two such blocks can exhaust
 * ("cannot allocate memory in static TLS block"). */
#ifdef CB_TLS_DYNAMIC
#define CB_TLS_MODEL
#else
#define CB_TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif
extern _Thread_local cb_call cb_current_call CB_TLS_MODEL;
#define CB_ENTER() (cb_current_call = (cb_call){__func__, 0})

/* Records the thread's error: the function of the current call (CB_ENTER's) and the formatted
 * detail, whole as "<function>: <detail>" (just the detail outside any call); returns status.
 * Internal code calls internal functions, never public entry points, so the function named is
 * always the one the caller called (tests/abi's internal_calls check keeps it so). */
cblob_status cb_fail(cblob_status status, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* The thread's last error: whole, the function's name ("" outside any call), and the detail. */
const char *cb_last_error_message(void);
const char *cb_last_error_function(void);
const char *cb_last_error_detail(void);

/* Argument checks: each returns CBLOB_OK or fails with a message naming the parameter. */
#define CB_REQUIRE(ptr) \
    do { \
        if ((ptr) == NULL) \
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "%s is NULL", #ptr); \
    } while (0)

/* CB_REQUIRE for the cheapest pure getters (count, dtype, num_axes), whose only failures are these
 * checks: they skip CB_ENTER and name the call only when a check fails, since on this machine the
 * store of the name was a tenth of a call's cost (bench/bench_hot). */
#define CB_GETTER_REQUIRE(ptr) \
    do { \
        if ((ptr) == NULL) { \
            CB_ENTER(); \
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "%s is NULL", #ptr); \
        } \
    } while (0)

#define CB_TRY(expr) \
    do { \
        cblob_status cb_try_status_ = (expr); \
        if (cb_try_status_ != CBLOB_OK) \
            return cb_try_status_; \
    } while (0)

/* Keeps the thread's message across work that may fail on purpose (trying an input as another
 * kind, say), so the message the caller sees is the one that explains its failure. */
typedef struct cb_saved_error {
    char text[1024];
    char function[64];
    size_t detail_start;
} cb_saved_error;
void cb_error_save(cb_saved_error *saved);
void cb_error_restore(const cb_saved_error *saved);

/* Inline: hot calls (cpu_ptr, asum) check a part on every call, and only a failure leaves the
 * line. Telling the compiler that the failure never returns CBLOB_OK lets CB_TRY return at once
 * from there, so the hot path keeps no registers across the call (no stack frame at all). */
cblob_status cb_fail_part(cblob_part part);
/* Whether part names a part: the test cb_check_part makes, for hot paths that check before they
 * enter a call (cblob_blob_cpu_ptr) and fail through cb_check_part after. */
static inline bool cb_part_is_valid(cblob_part part)
{
    return part == CBLOB_PART_DATA || part == CBLOB_PART_DIFF;
}
static inline cblob_status cb_check_part(cblob_part part)
{
    if (cb_part_is_valid(part))
        return CBLOB_OK;
    const cblob_status status = cb_fail_part(part);
    if (status == CBLOB_OK)
        __builtin_unreachable();
    return status;
}
cblob_status cb_check_bool(const char *name, int32_t value);

/* Hands text to a caller the way every text-returning call does: the length (without the NUL)
 * into out_length; with a buffer, the text and a NUL, or CBLOB_ERR_OUT_OF_RANGE when it does not
 * fit. buffer NULL with buffer_size 0 asks for the length only. */
cblob_status cb_return_text(const char *text, char *buffer, size_t buffer_size, size_t *out_length);

#endif /* CBLOB_UTIL_STATUS_H */
