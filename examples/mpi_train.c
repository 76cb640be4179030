/* SPDX-License-Identifier: BSD-2-Clause */
/* Data-parallel training with cblob and MPI, as Caffe trained one net on many GPUs:
 *
 *   mpirun -n 4 ./mpi_train
 *
 * Every rank holds the same model (a linear regression, y = w.x + b) and a shard of each batch.
 * Rank 0's initial weights are broadcast; after each backward pass every rank's gradients (the
 * parameters' diffs, laid out in one arena) are averaged over the ranks by one all-reduce, which
 * runs while the rank computes its loss; then every rank applies the same update. The ranks stay
 * identical, and training on N ranks equals training on one process with the whole batch.
 * Exits with 1 if the loss did not fall tenfold (docs/scale-out.md, "Training on many processes"). */
#include <stdio.h>
#include <stdlib.h>

#include "cblob/mpi.h"

enum { features = 8, batch = 256, steps = 200 };
static const float learning_rate = 0.1f;

static void check(cblob_status status, const char *what)
{
    if (status != CBLOB_OK) {
        fprintf(stderr, "mpi_train: %s: %s: %s\n", what, cblob_status_name(status), cblob_last_error_message());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* The sample i of the data set (the same on every rank): inputs in [-1, 1) and the target of a
 * hidden model. */
static void sample(int i, float *x, float *y)
{
    unsigned state = 2654435761u * (unsigned)(i + 1);
    *y = 0.5f;
    for (int j = 0; j < features; ++j) {
        state = state * 1664525u + 1013904223u;
        x[j] = (float)(state >> 8) / 8388608.0f - 1.0f;
        *y += (float)(j % 3 - 1) * 0.75f * x[j];
    }
}

/* Forward and backward over this rank's shard: the mean gradient into dw, db; the mean loss. */
static double backward(int first, int count, const float *w, float b, float *dw, float *db)
{
    double loss = 0, gw[features] = {0}, gb = 0;
    for (int i = first; i < first + count; ++i) {
        float x[features], y;
        sample(i, x, &y);
        double error = b - y;
        for (int j = 0; j < features; ++j)
            error += (double)w[j] * x[j];
        for (int j = 0; j < features; ++j)
            gw[j] += error * x[j];
        gb += error;
        loss += 0.5 * error * error;
    }
    for (int j = 0; j < features; ++j)
        dw[j] = (float)(gw[j] / count);
    *db = (float)(gb / count);
    return loss / count;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (batch % size != 0) {
        if (rank == 0)
            fprintf(stderr, "mpi_train: %d ranks do not split a batch of %d evenly\n", size, batch);
        MPI_Finalize();
        return 2;
    }

    cblob_context *context;
    check(cblob_context_create(&context), "cblob_context_create");
    cblob_comm *comm;
    if (cblob_comm_create_mpi(context, MPI_COMM_WORLD, &comm) != CBLOB_OK) {
        fprintf(stderr, "mpi_train: %s\n", cblob_mpi_last_error_message());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* A rank that stops would leave the others waiting: give up after a minute instead. */
    check(cblob_comm_set_timeout(comm, 60000), "cblob_comm_set_timeout");

    /* The parameters; each rank starts from its own random weights, then takes rank 0's. */
    const int64_t weight_shape = features, bias_shape = 1;
    cblob_blob *params[2];
    check(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &weight_shape, &params[0]), "create weights");
    check(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &bias_shape, &params[1]), "create bias");
    float initial[features + 1];
    srand((unsigned)rank + 1);
    for (int j = 0; j <= features; ++j)
        initial[j] = (float)rand() / (float)RAND_MAX - 0.5f;
    check(cblob_blob_copy_in(params[0], CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, initial, features), "copy in");
    check(cblob_blob_copy_in(params[1], CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, initial + features, 1), "copy in");
    check(cblob_comm_broadcast(comm, params, 2, CBLOB_PART_DATA, 0), "broadcast the initial weights");
    /* All gradients in one buffer: one all-reduce moves them all. */
    cblob_blob *gradients;
    check(cblob_arena_create(params, 2, CBLOB_PART_DIFF, 64, &gradients), "cblob_arena_create");

    const int shard = batch / size;
    double first_loss = 0, loss = 0;
    for (int step = 0; step < steps; ++step) {
        void *w, *b, *dw, *db;
        check(cblob_blob_mutable_cpu_ptr(params[0], CBLOB_PART_DATA, &w), "weights");
        check(cblob_blob_mutable_cpu_ptr(params[1], CBLOB_PART_DATA, &b), "bias");
        check(cblob_blob_mutable_cpu_ptr(params[0], CBLOB_PART_DIFF, &dw), "weight gradients");
        check(cblob_blob_mutable_cpu_ptr(params[1], CBLOB_PART_DIFF, &db), "bias gradient");
        const double shard_loss = backward(rank * shard, shard, w, *(float *)b, dw, db);
        /* Average the gradients over the ranks while the loss is averaged too (for the log). */
        cblob_comm_request *averaging;
        check(cblob_comm_allreduce_start(comm, &gradients, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_AVERAGE, &averaging),
              "start averaging the gradients");
        check(cblob_comm_request_wait(averaging), "average the gradients");
        cblob_comm_request_destroy(averaging);
        MPI_Allreduce(&shard_loss, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        loss /= size;
        if (step == 0)
            first_loss = loss;
        /* Caffe's SGD step: diff *= learning rate, then data -= diff. */
        for (int i = 0; i < 2; ++i) {
            check(cblob_blob_scale(params[i], CBLOB_PART_DIFF, learning_rate), "scale");
            check(cblob_blob_update(params[i]), "update");
        }
        if (rank == 0 && (step % 50 == 0 || step == steps - 1))
            printf("step %3d  loss %.6f\n", step, loss);
    }
    if (rank == 0)
        printf("%d ranks, %d samples each: loss %.6f -> %.6f\n", size, shard, first_loss, loss);

    cblob_blob_destroy(gradients);
    cblob_blob_destroy(params[0]);
    cblob_blob_destroy(params[1]);
    cblob_comm_destroy(comm);
    cblob_context_destroy(context);
    MPI_Finalize();
    return loss < first_loss / 10 ? 0 : 1;
}
