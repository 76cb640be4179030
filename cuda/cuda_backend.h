/* SPDX-License-Identifier: BSD-2-Clause */
/* The CUDA backend's entry point: the only name src/core/backends.c knows. */
#ifndef CBLOB_CUDA_BACKEND_H
#define CBLOB_CUDA_BACKEND_H

#include "backend.h"

const cb_backend *cb_cuda_backend(void);

/* NCCL (cuda_nccl.c): a unique id of CBLOB_NCCL_UNIQUE_ID_BYTES, and the engine table of an
 * NCCL communicator on `device` (joining it blocks until every rank has joined). */
cblob_status cb_cuda_nccl_unique_id(uint8_t *out_id);
cblob_status cb_cuda_nccl_engine(const cb_device *device, const uint8_t *unique_id, int32_t nranks, int32_t rank,
                                 cblob_comm_engine *out);

#endif
