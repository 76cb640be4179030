/* SPDX-License-Identifier: BSD-2-Clause */
/* Runs a fuzz target without libFuzzer (for compilers that lack it, such as GCC): over every file
 * of the given corpus folders, every prefix of it, and a fixed set of single-byte mutations, so
 * that the release build exercises the same target code on inputs near the seeds. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define MUTATIONS 256

static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

static void exercise(const uint8_t *data, size_t size)
{
    LLVMFuzzerTestOneInput(data, size);
    for (size_t cut = 0; cut < size; ++cut)
        LLVMFuzzerTestOneInput(data, cut);
    uint8_t *copy = malloc(size + 1);
    if (copy == NULL || size == 0) {
        free(copy);
        return;
    }
    uint64_t state = 0x9e3779b97f4a7c15u ^ size;
    for (int i = 0; i < MUTATIONS; ++i) {
        memcpy(copy, data, size);
        const uint64_t r = next_random(&state);
        copy[r % size] ^= (uint8_t)(1u << (r >> 32) % 8 | (r >> 40 & 0xf0));
        LLVMFuzzerTestOneInput(copy, size);
    }
    free(copy);
}

static int run_file(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return 0;
    static uint8_t data[1 << 20];
    const size_t size = fread(data, 1, sizeof data, file);
    fclose(file);
    exercise(data, size);
    return 1;
}

int main(int argc, char **argv)
{
    int files = 0;
    for (int i = 1; i < argc; ++i) {
        DIR *dir = opendir(argv[i]);
        if (dir == NULL) {
            files += run_file(argv[i]);
            continue;
        }
        struct dirent *entry;
        while ((entry = readdir(dir)) != NULL) {
            if (entry->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], entry->d_name);
            files += run_file(path);
        }
        closedir(dir);
    }
    if (files == 0) {
        fprintf(stderr, "replay: no corpus files in the given paths\n");
        return 1;
    }
    printf("replay: %d corpus files, each with its prefixes and %d mutations\n", files, MUTATIONS);
    return 0;
}
