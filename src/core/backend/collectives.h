/* SPDX-License-Identifier: BSD-2-Clause */
/* The backend interface's collectives part (src/core/backend.h), optional: a backend's own
 * collective engine on its devices' memory (NCCL in cuda/), which src/comm drives as it drives any
 * engine (its cblob_comm_engine table). */
#ifndef CBLOB_SRC_BACKEND_COLLECTIVES_H
#define CBLOB_SRC_BACKEND_COLLECTIVES_H

#include <stdint.h>

#include "cblob/cblob.h"

typedef struct cb_device cb_device;

typedef struct cb_backend_collectives {
    /* A unique id for a new communicator, CBLOB_NCCL_UNIQUE_ID_BYTES long (CBLOB_ERR_NCCL_MISSING
     * and friends when the library is missing). */
    cblob_status (*unique_id)(uint8_t *out_id);
    /* The engine table of this rank's member of the communicator on `device`, whose work goes on
     * the device's stream; joining blocks until every rank has joined. */
    cblob_status (*engine)(const cb_device *device, const uint8_t *unique_id, int32_t nranks, int32_t rank,
                           cblob_comm_engine *out);
} cb_backend_collectives;

#endif
