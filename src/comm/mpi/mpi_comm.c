/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob_comm_create_mpi: the MPI engine (mpi_engine.c) handed to cblob_comm_create. */
#include "cblob/mpi.h"

#include <stdarg.h>
#include <stdio.h>

#include "mpi_engine.h"

#define CBM_EXPORT __attribute__((visibility("default")))

static _Thread_local char last_error[CBLOB_COMM_MESSAGE_BYTES + 64];

static cblob_status fail(cblob_status status, const char *format, ...) __attribute__((format(printf, 2, 3)));
static cblob_status fail(cblob_status status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return status;
}

CBM_EXPORT const char *cblob_mpi_last_error_message(void)
{
    return last_error;
}

CBM_EXPORT cblob_status cblob_comm_create_mpi(cblob_context *context, MPI_Comm comm, cblob_comm **out_comm)
{
    if (context == NULL)
        return fail(CBLOB_ERR_INVALID_ARGUMENT, "cblob_comm_create_mpi: context is NULL");
    if (out_comm == NULL)
        return fail(CBLOB_ERR_INVALID_ARGUMENT, "cblob_comm_create_mpi: out_comm is NULL");
    char message[CBLOB_COMM_MESSAGE_BYTES] = "";
    cbm_engine *engine;
    const cblob_status created = cbm_engine_create(comm, &engine, message, sizeof message);
    if (created != CBLOB_OK)
        return fail(created, "cblob_comm_create_mpi: %s", message);
    const cblob_comm_engine table = {
        .struct_size = sizeof table,
        .name = "mpi",
        .rank = cbm_engine_rank(engine),
        .size = cbm_engine_size(engine),
        .memory = CBLOB_MEMORY_HOST,
        .dtypes = cbm_engine_dtypes(),
        .state = engine,
        .allreduce_sum = cbm_allreduce_sum,
        .broadcast = cbm_broadcast,
        .barrier = cbm_barrier,
        .wait = cbm_wait,
        .destroy = cbm_engine_destroy,
    };
    const cblob_status status = cblob_comm_create(context, &table, out_comm);
    if (status != CBLOB_OK) {
        /* The engine stays ours when cblob refuses it. */
        cbm_engine_destroy(engine);
        return fail(status, "%s", cblob_last_error_message());
    }
    return CBLOB_OK;
}
