/* SPDX-License-Identifier: BSD-2-Clause */
/* What the file I/O tests share: private temporary folders (removed without following links or
 * crossing mounts), bytes to save, private device nodes and file systems, and looks at a folder. */
#ifndef CBLOB_TESTS_IO_SUPPORT_H
#define CBLOB_TESTS_IO_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cblob/cblob.h"

/* A fresh folder under $TMPDIR (or /tmp), and its removal: nothing outside it is touched. */
bool io_temp_folder(char *folder, size_t size);
void io_remove_tree(const char *folder);

/* "folder/name" into a static buffer of its own per slot (0..7), for short test code. */
const char *io_path(int slot, const char *folder, const char *name);

/* A float32 blob of count values (seed picks them) and its BlobProto bytes. */
typedef struct io_payload {
    cblob_context *context;
    cblob_blob *blob;
    uint8_t *bytes;
    size_t size;
} io_payload;

bool io_payload_make(io_payload *payload, int64_t count, int seed);
cblob_status io_payload_save(const io_payload *payload, const char *path);
void io_payload_free(io_payload *payload);

/* Whether the file holds exactly these bytes. */
bool io_file_holds(const char *path, const void *bytes, size_t size);
bool io_write_file(const char *path, const void *bytes, size_t size);

/* How many entries the folder has (without "." and ".."), and how many are cblob temporaries. */
int io_count_entries(const char *folder);
int io_count_temporaries(const char *folder);

/* A character (or block) device node made with mknod in a test folder, a twin of a system device
 * by its numbers; false with the reason where this process may not make one. */
bool io_make_device(const char *path, bool block, unsigned major, unsigned minor, char *why, size_t why_size);

/* Mounts a tmpfs with these options at folder, in a mount namespace of this process alone (made
 * through a user namespace when the process is not root), so it goes away with the process. False
 * with the reason where that is not possible. */
bool io_private_tmpfs(const char *folder, const char *options, char *why, size_t why_size);

/* A listening Unix socket bound at path (its descriptor), or -1. */
int io_make_socket(const char *path);

/* A message that contains `part` (the last error message by default). */
bool io_message_has(const char *part);

#endif
