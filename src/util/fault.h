/* SPDX-License-Identifier: BSD-2-Clause */
/* Failure injection for tests (src/util; SQLite's src/test_malloc.c is the model): the Nth host
 * allocation, or the Nth use of an I/O step (open, read, write, fsync, rename), fails as the
 * machine would make it fail, so that tests can prove "a failed call changes nothing" for every
 * point of failure. Every host allocation of cblob goes through src/util/alloc.h and every file
 * operation through src/io, which ask here first. Disarmed (always, outside tests) a check costs
 * one relaxed atomic load. */
#ifndef CBLOB_UTIL_FAULT_H
#define CBLOB_UTIL_FAULT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum cb_fault_step {
    CB_FAULT_ALLOC,  /* a host allocation (malloc and friends, mappings, pinned memory) */
    CB_FAULT_OPEN,   /* opening or creating a file or folder */
    CB_FAULT_READ,   /* read, pread */
    CB_FAULT_WRITE,  /* write, pwrite, fallocate, ftruncate */
    CB_FAULT_FSYNC,  /* fsync, syncfs */
    CB_FAULT_RENAME, /* putting a file in place: rename, link */
    CB_FAULT_IO,     /* any of the I/O steps above, counted together */
    CB_FAULT_STEPS
} cb_fault_step;

/* A write that writes half of what it was given and returns that (a short write), for `error`. */
#define CB_FAULT_SHORT (-1)

/* Arms a step: its nth use from now fails (1: the next one) with `error` (an errno, or
 * CB_FAULT_SHORT for writes; ignored for allocations), and every use after it too when sticky.
 * nth 0 disarms. Counting restarts. Process-wide: tests arm, call, and disarm on one thread. */
void cb_fault_arm(cb_fault_step step, int64_t nth, int error, bool sticky);
/* The uses of step since it was last armed (or since the process started). */
int64_t cb_fault_count(cb_fault_step step);
/* Whether an armed failure fired since the step was armed. */
bool cb_fault_fired(cb_fault_step step);

/* Called by every use of a step: 0 to go on, or the error to fail with. */
int cb_fault_check(cb_fault_step step);

#endif
