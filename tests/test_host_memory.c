/* SPDX-License-Identifier: BSD-2-Clause */
/* Host buffers (src/cpu/host_memory.c): when large ones ask the kernel for huge pages. The
 * request is read back from /proc/self/smaps (the "hg" flag madvise(MADV_HUGEPAGE) sets on the
 * mapping), so these tests check the policy itself, never a timing. Each test is a process of its
 * own, so CBLOB_HUGE_PAGES (read once) and the bytes freed lately start afresh in each. */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "host_memory.h"

#define LARGE ((size_t)8 << 20)

/* 1: the mapping holding ptr carries the "hg" flag; 0: it does not; -1: no such mapping found. */
static int advised_huge(const void *ptr)
{
    FILE *smaps = fopen("/proc/self/smaps", "r");
    if (smaps == NULL)
        return -1;
    char line[512];
    bool inside = false;
    int result = -1;
    while (fgets(line, sizeof line, smaps) != NULL) {
        unsigned long start, end;
        char dash;
        if (sscanf(line, "%lx%c%lx ", &start, &dash, &end) == 3 && dash == '-') {
            inside = (uintptr_t)ptr >= start && (uintptr_t)ptr < end;
            continue;
        }
        if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            result = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(smaps);
    return result;
}

/* Skips where the kernel has no transparent huge pages to ask for (madvise fails). */
static void require_thp(void)
{
    void *probe = mmap(NULL, (size_t)2 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED)
        SKIP("cannot map 2 MiB");
    const int advised = madvise(probe, (size_t)2 << 20, MADV_HUGEPAGE);
    munmap(probe, (size_t)2 << 20);
    if (advised != 0)
        SKIP("this kernel has no transparent huge pages (madvise(MADV_HUGEPAGE) fails)");
}

static void *large(void)
{
    void *ptr = NULL;
    if (cb_host_alloc(LARGE, true, &ptr) != CBLOB_OK)
        return NULL;
    return ptr;
}

TEST(first_large_buffer_of_a_process_asks_for_no_huge_pages)
{
    require_thp();
    unsetenv("CBLOB_HUGE_PAGES");
    void *first = large();
    CHECK(first != NULL);
    CHECK_EQ_INT(advised_huge(first), 0);
    CHECK(((const char *)first)[LARGE - 1] == 0);
    cb_host_free(first, LARGE);
}

/* Memory just freed is reused with huge pages, as many bytes as were freed and no more. */
TEST(buffer_after_as_many_bytes_freed_asks_for_huge_pages_once)
{
    require_thp();
    unsetenv("CBLOB_HUGE_PAGES");
    void *first = large();
    CHECK(first != NULL);
    CHECK_EQ_INT(advised_huge(first), 0);
    cb_host_free(first, LARGE);
    void *second = large(), *third = large();
    CHECK(second != NULL && third != NULL);
    CHECK_EQ_INT(advised_huge(second), 1);
    CHECK_EQ_INT(advised_huge(third), 0);
    CHECK(((const char *)second)[0] == 0 && ((const char *)second)[LARGE - 1] == 0);
    cb_host_free(second, LARGE);
    cb_host_free(third, LARGE);
}

/* Bytes freed long ago have been handed back (free page reporting): they do not count. */
TEST(bytes_freed_more_than_a_second_ago_do_not_count)
{
    require_thp();
    unsetenv("CBLOB_HUGE_PAGES");
    void *first = large();
    CHECK(first != NULL);
    cb_host_free(first, LARGE);
    usleep((useconds_t)((CB_HUGE_PAGES_REUSE_SECONDS + 0.3) * 1e6));
    void *second = large();
    CHECK(second != NULL);
    CHECK_EQ_INT(advised_huge(second), 0);
    cb_host_free(second, LARGE);
}

/* A smaller buffer freed does not pay for a larger one. */
TEST(fewer_bytes_freed_than_asked_do_not_count)
{
    require_thp();
    unsetenv("CBLOB_HUGE_PAGES");
    void *small = NULL;
    CHECK_OK(cb_host_alloc(CB_MAPPED_HOST_BYTES, false, &small));
    cb_host_free(small, CB_MAPPED_HOST_BYTES);
    void *bigger = large();
    CHECK(bigger != NULL);
    CHECK_EQ_INT(advised_huge(bigger), 0);
    cb_host_free(bigger, LARGE);
}

TEST(huge_pages_setting_1_asks_always)
{
    require_thp();
    setenv("CBLOB_HUGE_PAGES", "1", 1);
    void *first = large();
    CHECK(first != NULL);
    CHECK_EQ_INT(advised_huge(first), 1);
    cb_host_free(first, LARGE);
}

TEST(huge_pages_setting_0_never_asks)
{
    require_thp();
    setenv("CBLOB_HUGE_PAGES", "0", 1);
    void *first = large();
    CHECK(first != NULL);
    cb_host_free(first, LARGE);
    void *second = large();
    CHECK(second != NULL);
    CHECK_EQ_INT(advised_huge(second), 0);
    cb_host_free(second, LARGE);
}

/* Small buffers come from malloc and ask for nothing; they are 256-byte aligned and zeroed. */
TEST(small_buffers_are_aligned_and_zeroed)
{
    void *small = NULL;
    CHECK_OK(cb_host_alloc(1000, true, &small));
    CHECK((uintptr_t)small % 256 == 0);
    for (int i = 0; i < 1000; ++i)
        CHECK(((const char *)small)[i] == 0);
    cb_host_free(small, 1000);
}
