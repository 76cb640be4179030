/* SPDX-License-Identifier: BSD-2-Clause */
/* What the parts of src/io share: how a planned output starts, and the temporaries' rules. */
#ifndef CBLOB_SRC_IO_INTERNAL_H
#define CBLOB_SRC_IO_INTERNAL_H

#include <stdbool.h>
#include <sys/stat.h>

#include "io.h"

/* What a file is, for messages: "a FIFO (named pipe)", "a folder", ... */
const char *cb_file_kind(mode_t mode);

/* How an output reaches its target. */
typedef enum cb_output_kind {
    CB_OUTPUT_REPLACE,  /* a temporary renamed over the name at commit */
    CB_OUTPUT_CREATE,   /* a temporary given the name at commit, which must still be free then */
    CB_OUTPUT_STAGED,   /* a temporary copied into the target (a file with other hard links) */
    CB_OUTPUT_IN_PLACE, /* the target itself: a device, a FIFO, a caller's descriptor */
} cb_output_kind;

/* An output to start. Every descriptor in it becomes the output's, even when starting fails. */
typedef struct cb_output_plan {
    cb_output_kind kind;
    const char *display; /* how messages name the output */
    int dirfd;           /* the target's folder, for a temporary (-1 for IN_PLACE) */
    const char *name;    /* the target's name in dirfd */
    int fd;              /* IN_PLACE: the target; STAGED: the target, opened for writing */
    bool close_fd;       /* IN_PLACE: whether the output closes fd (not a caller's) */
    bool durable;        /* fsync before the file takes its place */
    bool remove_stale;   /* remove the folder's stale temporaries first (an output folder did) */
    bool private_file;   /* a fresh file is made 0600 whatever the umask (the kernel cache's entries) */
    /* REPLACE: the file replaced, whose mode and owner the new one keeps; NULL: a fresh file */
    const struct stat *original;
} cb_output_plan;

cblob_status cb_output_start(const cb_output_plan *plan, cb_output **out);

/* Removes the temporaries in the folder that no writer holds any more (best effort: a folder
 * that cannot be listed, or a file that cannot be locked, is left as it is). */
void cb_remove_stale_temporaries(int dirfd);

#endif
