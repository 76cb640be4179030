/* SPDX-License-Identifier: BSD-2-Clause */
#include "harness.h"

#include <stdarg.h>

#define CBT_MAX_TESTS 1024

static struct {
    const char *name;
    cbt_fn fn;
} tests[CBT_MAX_TESTS];
static int test_count;
static bool failed;

void cbt_register(const char *name, cbt_fn fn)
{
    if (test_count == CBT_MAX_TESTS) {
        fprintf(stderr, "harness: more than %d tests in one suite\n", CBT_MAX_TESTS);
        exit(1);
    }
    tests[test_count].name = name;
    tests[test_count].fn = fn;
    ++test_count;
}

void cbt_fail(const char *file, int line, const char *format, ...)
{
    failed = true;
    fprintf(stderr, "%s:%d: FAILED: ", file, line);
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
}

bool cbt_failed(void)
{
    return failed;
}

void cbt_skip(const char *reason)
{
    printf("SKIPPED: %s\n", reason);
    fflush(stdout);
    exit(77);
}

/* With a name: runs that test. Without: runs every test (handy under a debugger). --list prints
 * the names. */
int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < test_count; ++i)
            printf("%s\n", tests[i].name);
        return 0;
    }
    int ran = 0;
    for (int i = 0; i < test_count; ++i) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0)
            continue;
        const bool failed_before = failed;
        failed = false;
        tests[i].fn();
        ++ran;
        if (argc == 1)
            printf("%s %s\n", failed ? "FAIL" : "ok  ", tests[i].name);
        failed = failed || failed_before;
    }
    if (ran == 0) {
        fprintf(stderr, "harness: no test named '%s'\n", argc > 1 ? argv[1] : "");
        return 1;
    }
    return failed ? 1 : 0;
}
