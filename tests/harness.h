/* SPDX-License-Identifier: BSD-2-Clause */
/* A small test harness: each TEST is one CTest test (tests/CMakeLists.txt registers every
 * TEST(name) it finds in a suite's sources), run in its own process so that sanitizers report
 * leaks per test. A test passes when it returns without a failed CHECK; it skips by calling
 * SKIP(reason), which exits with 77 (CTest's SKIP_RETURN_CODE). */
#ifndef CBLOB_TESTS_HARNESS_H
#define CBLOB_TESTS_HARNESS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cblob/cblob.h"

typedef void (*cbt_fn)(void);
void cbt_register(const char *name, cbt_fn fn);
void cbt_fail(const char *file, int line, const char *format, ...) __attribute__((format(printf, 3, 4)));
bool cbt_failed(void);
void cbt_skip(const char *reason) __attribute__((noreturn));

#define TEST(name) \
    static void name(void); \
    __attribute__((constructor)) static void cbt_register_##name(void) { cbt_register(#name, name); } \
    static void name(void)

#define SKIP(reason) cbt_skip(reason)

/* Each CHECK returns from the test on failure: later checks would only repeat the damage. */
#define CHECK(cond) \
    do { \
        if (!(cond)) { \
            cbt_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
            return; \
        } \
    } while (0)

#define CHECK_MSG(cond, ...) \
    do { \
        if (!(cond)) { \
            cbt_fail(__FILE__, __LINE__, __VA_ARGS__); \
            return; \
        } \
    } while (0)

#define CHECK_STATUS(call, expected) \
    do { \
        cblob_status cbt_got_ = (call); \
        cblob_status cbt_want_ = (expected); \
        if (cbt_got_ != cbt_want_) { \
            cbt_fail(__FILE__, __LINE__, "%s returned %s, expected %s (message: %s)", #call, \
                     cblob_status_name(cbt_got_), cblob_status_name(cbt_want_), cblob_last_error_message()); \
            return; \
        } \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, CBLOB_OK)

#define CHECK_EQ_INT(a, b) \
    do { \
        long long cbt_a_ = (long long)(a), cbt_b_ = (long long)(b); \
        if (cbt_a_ != cbt_b_) { \
            cbt_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a, cbt_a_, #b, cbt_b_); \
            return; \
        } \
    } while (0)

#define CHECK_NEAR(a, b, tolerance) \
    do { \
        double cbt_a_ = (double)(a), cbt_b_ = (double)(b); \
        if (!(cbt_a_ - cbt_b_ <= (tolerance) && cbt_b_ - cbt_a_ <= (tolerance))) { \
            cbt_fail(__FILE__, __LINE__, "%s == %.17g, expected %.17g within %g", #a, cbt_a_, cbt_b_, (double)(tolerance)); \
            return; \
        } \
    } while (0)

/* A failed call must explain itself. */
#define CHECK_ERROR(call, expected) \
    do { \
        CHECK_STATUS(call, expected); \
        CHECK_MSG(cblob_last_error_message()[0] != '\0', "%s failed with an empty message", #call); \
    } while (0)

#endif
