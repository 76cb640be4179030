/* SPDX-License-Identifier: BSD-2-Clause */
#include "mpi_support.h"

#include <time.h>

const cblob_dtype every_dtype[4] = {CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64, CBLOB_DTYPE_INT32, CBLOB_DTYPE_UINT32};

int world_rank(void)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

int world_size(void)
{
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

bool test_comm_open(test_comm *out)
{
    *out = (test_comm){0};
    if (cblob_context_create(&out->context) != CBLOB_OK) {
        cbt_fail(__FILE__, __LINE__, "cblob_context_create: %s", cblob_last_error_message());
        return false;
    }
    const cblob_status status = cblob_comm_create_mpi(out->context, MPI_COMM_WORLD, &out->comm);
    if (status != CBLOB_OK) {
        cbt_fail(__FILE__, __LINE__, "cblob_comm_create_mpi: %s: %s", cblob_status_name(status),
                 cblob_mpi_last_error_message());
        cblob_context_destroy(out->context);
        return false;
    }
    if (cblob_comm_set_timeout(out->comm, MPI_TEST_TIMEOUT_MS) != CBLOB_OK) {
        cbt_fail(__FILE__, __LINE__, "cblob_comm_set_timeout: %s", cblob_last_error_message());
        test_comm_close(out);
        return false;
    }
    return true;
}

void test_comm_close(test_comm *comm)
{
    cblob_comm_destroy(comm->comm);
    cblob_context_destroy(comm->context);
    *comm = (test_comm){0};
}

cblob_blob *new_blob(cblob_context *context, cblob_dtype dtype, int64_t count)
{
    cblob_blob *blob = NULL;
    if (cblob_blob_create(context, dtype, 1, &count, &blob) != CBLOB_OK)
        cbt_fail(__FILE__, __LINE__, "cblob_blob_create: %s", cblob_last_error_message());
    return blob;
}

size_t dtype_size(cblob_dtype dtype)
{
    return dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4;
}

/* splitmix64: the same numbers on every rank and every run. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void rank_values(cblob_dtype dtype, int rank, int64_t count, uint64_t seed, void *out)
{
    for (int64_t i = 0; i < count; ++i) {
        const uint64_t bits = mix(seed * 1000003u + (uint64_t)rank * 7919u + (uint64_t)i);
        const double unit = (double)(bits >> 11) / 9007199254740992.0 - 0.5; /* [-0.5, 0.5) */
        switch (dtype) {
        case CBLOB_DTYPE_FLOAT32: ((float *)out)[i] = (float)(unit * 3.0); break;
        case CBLOB_DTYPE_FLOAT64: ((double *)out)[i] = unit * 3.0; break;
        /* Large enough to carry into high bits, small enough not to overflow over 4 ranks. */
        case CBLOB_DTYPE_INT32: ((int32_t *)out)[i] = (int32_t)(unit * 1e9); break;
        default: ((uint32_t *)out)[i] = (uint32_t)(bits >> 32); break; /* uint32 sums wrap */
        }
    }
}

bool on_every_rank(bool ok)
{
    int mine = ok, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all != 0;
}

bool same_bytes_on_every_rank(const void *bytes, size_t size)
{
    unsigned char *root = malloc(size ? size : 1);
    if (world_rank() == 0)
        memcpy(root, bytes, size);
    MPI_Bcast(root, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
    const bool same = memcmp(root, bytes, size) == 0;
    free(root);
    return on_every_rank(same);
}

double seconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}
