/* SPDX-License-Identifier: BSD-2-Clause */
/* How many threads the process should use by default: CBLOB_NUM_THREADS, else the CPUs it may run
 * on, which is the smaller of its affinity mask and its cgroup's CPU quota (a container limited to
 * two CPUs' worth of time on a 64-CPU host must not start 64 threads). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_ALLOC */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "threads.h"

static int cpus_in_affinity_mask(void)
{
    for (int cpus = 1024; cpus <= (1 << 20); cpus *= 2) {
        cpu_set_t *set = CPU_ALLOC((size_t)cpus);
        if (set == NULL)
            break;
        const size_t size = CPU_ALLOC_SIZE((size_t)cpus);
        if (sched_getaffinity(0, size, set) == 0) {
            const int count = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            return count;
        }
        CPU_FREE(set);
        if (errno != EINVAL) /* EINVAL: the kernel's mask is larger than ours */
            break;
    }
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 && online < INT_MAX ? (int)online : 1;
}

/* Reads a small file of the kernel's (/proc, /sys) into text. These are fixed system paths, not a
 * user's, and procfs reports a size of 0 for its files, so src/io's snapshot reader (which checks
 * sizes) does not apply. */
static bool read_system_file(const char *path, char *text, size_t size)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return false;
    size_t used = 0;
    while (used + 1 < size) {
        const ssize_t got = read(fd, text + used, size - 1 - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        used += (size_t)got;
    }
    close(fd);
    text[used] = '\0';
    return used > 0;
}

/* CPUs' worth of time a quota allows, rounded up; INT_MAX without a quota. */
static int quota_cpus(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return INT_MAX;
    const long long cpus = (quota + period - 1) / period;
    return cpus < INT_MAX ? (int)cpus : INT_MAX;
}

/* cgroup v2: "max 100000" or "200000 100000" in cpu.max. */
static int v2_limit(const char *folder)
{
    char path[PATH_MAX], text[64];
    if (snprintf(path, sizeof path, "%s/cpu.max", folder) >= (int)sizeof path || !read_system_file(path, text, sizeof text))
        return INT_MAX;
    long long quota = 0, period = 0;
    if (strncmp(text, "max", 3) == 0 || sscanf(text, "%lld %lld", &quota, &period) != 2)
        return INT_MAX;
    return quota_cpus(quota, period);
}

/* cgroup v1: cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us. */
static int v1_limit(const char *folder)
{
    char path[PATH_MAX], text[64];
    long long quota = 0, period = 0;
    if (snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", folder) >= (int)sizeof path ||
        !read_system_file(path, text, sizeof text) || sscanf(text, "%lld", &quota) != 1)
        return INT_MAX;
    if (snprintf(path, sizeof path, "%s/cpu.cfs_period_us", folder) >= (int)sizeof path ||
        !read_system_file(path, text, sizeof text) || sscanf(text, "%lld", &period) != 1)
        return INT_MAX;
    return quota_cpus(quota, period);
}

/* The smallest limit of the cgroup at mount + group and of its ancestors up to the mount: a
 * quota on a parent binds its children. */
static int limit_along(const char *mount, const char *group, int (*limit)(const char *folder))
{
    char folder[PATH_MAX];
    if (snprintf(folder, sizeof folder, "%s%s", mount, strcmp(group, "/") == 0 ? "" : group) >= (int)sizeof folder)
        return INT_MAX;
    const size_t mount_length = strlen(mount);
    int smallest = INT_MAX;
    for (;;) {
        const int here = limit(folder);
        smallest = here < smallest ? here : smallest;
        char *slash = strrchr(folder, '/');
        if (slash == NULL || (size_t)(slash - folder) < mount_length)
            return smallest;
        *slash = '\0';
    }
}

/* The process's cgroups, from /proc/self/cgroup: "0::/group" (v2) and "N:cpu,cpuacct:/group" (v1). */
static int cpus_in_cgroup_quota(void)
{
    char text[4096];
    if (!read_system_file("/proc/self/cgroup", text, sizeof text))
        return INT_MAX;
    int smallest = INT_MAX;
    char *lines = NULL;
    for (char *line = strtok_r(text, "\n", &lines); line != NULL; line = strtok_r(NULL, "\n", &lines)) {
        char *controllers = strchr(line, ':');
        char *group = controllers != NULL ? strchr(controllers + 1, ':') : NULL;
        if (group == NULL)
            continue;
        *group++ = '\0';
        ++controllers;
        int limit = INT_MAX;
        if (strcmp(line, "0") == 0 && *controllers == '\0') {
            limit = limit_along("/sys/fs/cgroup", group, v2_limit);
        } else {
            for (char *save = NULL, *name = strtok_r(controllers, ",", &save); name != NULL;
                 name = strtok_r(NULL, ",", &save)) {
                if (strcmp(name, "cpu") == 0) {
                    const int a = limit_along("/sys/fs/cgroup/cpu", group, v1_limit);
                    const int b = limit_along("/sys/fs/cgroup/cpu,cpuacct", group, v1_limit);
                    limit = a < b ? a : b;
                }
            }
        }
        smallest = limit < smallest ? limit : smallest;
    }
    return smallest;
}

/* CBLOB_NUM_THREADS when it is a whole number from 1 on (capped at CB_MAX_THREADS); 0 otherwise. */
static int threads_from_environment(void)
{
    const char *text = getenv("CBLOB_NUM_THREADS");
    if (text == NULL || *text == '\0')
        return 0;
    char *end = NULL;
    errno = 0;
    const long value = strtol(text, &end, 10);
    if (*end != '\0' || value < 1)
        return 0;
    return errno == ERANGE || value > CB_MAX_THREADS ? CB_MAX_THREADS : (int)value;
}

static int default_threads;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void find_default_threads(void)
{
    int threads = threads_from_environment();
    if (threads == 0) {
        const int affinity = cpus_in_affinity_mask(), quota = cpus_in_cgroup_quota();
        threads = affinity < quota ? affinity : quota;
    }
    default_threads = threads < 1 ? 1 : threads > CB_MAX_THREADS ? CB_MAX_THREADS : threads;
}

int cb_threads_default(void)
{
    pthread_once(&default_once, find_default_threads);
    return default_threads;
}
