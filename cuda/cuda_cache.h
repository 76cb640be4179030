/* SPDX-License-Identifier: BSD-2-Clause */
/* The kernel cache: compiled kernel families, in memory per device and on disk per architecture.
 *
 * Mode (CBLOB_KERNEL_CACHE): disk (default), memory, or off (every use compiles). Folder:
 * CBLOB_KERNEL_CACHE_DIR, else $XDG_CACHE_HOME/cblob/kernels, else $HOME/.cache/cblob/kernels.
 * Both are read once per process.
 *
 * A disk entry's name carries the SHA-256 key of everything that decides the compiler's output:
 * the rendered source, the options, the target architecture, NVRTC's version and cblob's
 * version (never the output itself). Its header repeats the key and carries the output's
 * SHA-256; an entry that fails either check is deleted and compiled again. An entry that passes
 * them is NVRTC's output: if the driver refuses it, the load fails with a clear error (a new
 * compilation would give the same bytes) and the entry stays. Entries are written to a temporary
 * file in the folder and renamed into place, so readers never see half an entry. When the folder
 * cannot be written, kernels compiled from then on stay in memory and the log of the context that
 * met the failure gets one warning.
 *
 * Who may write it: the folder is made 0700 and entries 0600; an existing folder, and each
 * entry, is used only when the effective user owns it and neither group nor others may write it,
 * and entries are opened without following symbolic links. A refused folder is not used at all
 * (one warning); a refused entry is compiled anew and replaced, and the log says why.
 *
 * In memory, each (device, family) slot has a lock: the first user loads or compiles, concurrent
 * first users wait for it, and later users read the published module without locking.
 */
#ifndef CBLOB_CUDA_CACHE_H
#define CBLOB_CUDA_CACHE_H

#include <stdint.h>

#include "cuda_device.h"

typedef struct cb_cuda_kernel {
    cbcu_function function;
    int blocks_per_multiprocessor; /* the occupancy the driver reported at load */
    cbcu_function combine; /* a reduction's second pass; NULL for other families */
    cbcu_module transient; /* set in mode off: unloaded by cb_cuda_kernel_release */
} cb_cuda_kernel;

/* The entry point of a family's kernel for dtype on a device the core opened; loads or compiles
 * the family at first use. */
cblob_status cb_cuda_kernel_get(const cb_device *device, cb_cuda_family_id family, cblob_dtype dtype,
                                cb_cuda_kernel *out);
/* After the launch: in mode off, waits for the stream and unloads the module. */
void cb_cuda_kernel_release(const cb_device *device, cb_cuda_kernel *kernel);

/* cblob_kernel_cache_warm_up: every family for `device`, or with device NULL for a compute
 * capability into the disk cache. */
cblob_status cb_cuda_cache_warm_up(const cb_device *device, int32_t compute_capability, int32_t *compiled);

cblob_cache_mode cb_cuda_cache_mode(void);
void cb_cuda_cache_dir(char *text, size_t size);
/* One line for reports: the mode, the folder and, when it fell back, why. */
void cb_cuda_cache_describe(char *text, size_t size);

/* Counts since the process started (tests and benchmarks read them). */
typedef struct cb_cuda_cache_stats {
    uint64_t compiles;      /* NVRTC compilations of a family */
    uint64_t disk_hits;     /* entries read, verified and loaded */
    uint64_t disk_writes;   /* entries written */
    uint64_t disk_rejected; /* entries found damaged or unloadable, deleted */
} cb_cuda_cache_stats;

void cb_cuda_cache_stats_get(cb_cuda_cache_stats *out);
/* Unloads every family from every device, keeping the disk cache (tests and benchmarks measure
 * the disk path with it). No kernel may be running. */
void cb_cuda_cache_forget_memory(void);

#endif
