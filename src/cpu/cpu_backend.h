/* SPDX-License-Identifier: BSD-2-Clause */
/* The CPU backend's entry point: the only name src/core/backends.c knows of it. */
#ifndef CBLOB_CPU_BACKEND_H
#define CBLOB_CPU_BACKEND_H

#include "backend.h"

/* The CPU as a backend (src/core/backend.h): host memory (host_memory.h) and the CPU kernel
 * table (generated/cpu/dispatch.c); no device part, no queue. */
extern const cb_backend cb_cpu_backend;

#endif
