/* SPDX-License-Identifier: BSD-2-Clause */
/* The data-parallel training scenario of Caffe's multi-GPU solver, over MPI: a small linear model
 * (y = w.x + b, squared loss), the batch split evenly across the ranks, initial weights broadcast
 * from rank 0, each rank's gradients (the diffs) laid out in one arena and averaged with one
 * all-reduce, then cblob_blob_update on every rank. It must match training one process on the
 * whole batch, and every rank must hold the same weights. */
#include <math.h>

#include "mpi_support.h"

enum { features = 6, batch = 48, steps = 30 };
static const float learning_rate = 0.05f;

/* The whole batch, the same on every rank: inputs and targets of a known model plus noise. */
static void make_batch(float x[batch][features], float y[batch])
{
    const float true_w[features] = {0.5f, -1.25f, 2.0f, 0.0f, 0.75f, -0.5f};
    float noise[batch];
    rank_values(CBLOB_DTYPE_FLOAT32, 999, batch, 2, noise);
    float flat[batch * features];
    rank_values(CBLOB_DTYPE_FLOAT32, 998, batch * features, 3, flat);
    for (int i = 0; i < batch; ++i) {
        y[i] = 0.3f + 0.1f * noise[i];
        for (int j = 0; j < features; ++j) {
            x[i][j] = flat[i * features + j];
            y[i] += true_w[j] * x[i][j];
        }
    }
}

/* The mean gradient of the squared loss over samples [first, first + count). */
static void gradients(const float x[batch][features], const float y[batch], int first, int count, const float *w,
                      float b, float *dw, float *db)
{
    double sum_w[features] = {0}, sum_b = 0;
    for (int i = first; i < first + count; ++i) {
        double error = b - y[i];
        for (int j = 0; j < features; ++j)
            error += (double)w[j] * x[i][j];
        for (int j = 0; j < features; ++j)
            sum_w[j] += error * x[i][j];
        sum_b += error;
    }
    for (int j = 0; j < features; ++j)
        dw[j] = (float)(sum_w[j] / count);
    *db = (float)(sum_b / count);
}

/* One process, the whole batch: the reference. */
static void train_serially(const float x[batch][features], const float y[batch], float *w, float *b)
{
    for (int step = 0; step < steps; ++step) {
        float dw[features], db;
        gradients(x, y, 0, batch, w, *b, dw, &db);
        for (int j = 0; j < features; ++j)
            w[j] -= learning_rate * dw[j];
        *b -= learning_rate * db;
    }
}

static float *mutable_part(cblob_blob *blob, cblob_part part)
{
    void *pointer = NULL;
    return cblob_blob_mutable_cpu_ptr(blob, part, &pointer) == CBLOB_OK ? pointer : NULL;
}

TEST(data_parallel_sgd_matches_training_on_the_whole_batch)
{
    static float x[batch][features], y[batch];
    make_batch(x, y);
    test_comm tc;
    CHECK(test_comm_open(&tc));
    cblob_blob *params[2] = {new_blob(tc.context, CBLOB_DTYPE_FLOAT32, features),
                             new_blob(tc.context, CBLOB_DTYPE_FLOAT32, 1)};
    CHECK(params[0] != NULL && params[1] != NULL);
    /* Each rank starts from weights of its own; rank 0's are broadcast, as a solver does. */
    float initial[features + 1];
    rank_values(CBLOB_DTYPE_FLOAT32, world_rank(), features + 1, 11, initial);
    CHECK_OK(cblob_blob_copy_in(params[0], CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, initial, features));
    CHECK_OK(cblob_blob_copy_in(params[1], CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, initial + features, 1));
    CHECK_OK(cblob_comm_broadcast(tc.comm, params, 2, CBLOB_PART_DATA, 0));
    cblob_blob *diffs = NULL;
    CHECK_OK(cblob_arena_create(params, 2, CBLOB_PART_DIFF, 64, &diffs));

    const int shard = batch / world_size();
    CHECK_MSG(shard * world_size() == batch, "%d ranks do not split a batch of %d evenly", world_size(), batch);
    for (int step = 0; step < steps; ++step) {
        float *w = mutable_part(params[0], CBLOB_PART_DATA), *b = mutable_part(params[1], CBLOB_PART_DATA);
        float *dw = mutable_part(params[0], CBLOB_PART_DIFF), *db = mutable_part(params[1], CBLOB_PART_DIFF);
        CHECK(w != NULL && b != NULL && dw != NULL && db != NULL);
        gradients(x, y, world_rank() * shard, shard, w, *b, dw, db);
        CHECK_OK(cblob_comm_allreduce(tc.comm, &diffs, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_AVERAGE));
        for (int i = 0; i < 2; ++i) {
            CHECK_OK(cblob_blob_scale(params[i], CBLOB_PART_DIFF, learning_rate));
            CHECK_OK(cblob_blob_update(params[i]));
        }
    }

    float got[features + 1];
    CHECK_OK(cblob_blob_copy_out(params[0], CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, got, features));
    CHECK_OK(cblob_blob_copy_out(params[1], CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, got + features, 1));
    CHECK_MSG(same_bytes_on_every_rank(got, sizeof got), "the ranks' weights differ after training");
    float w[features], b;
    rank_values(CBLOB_DTYPE_FLOAT32, 0, features + 1, 11, initial);
    memcpy(w, initial, sizeof w);
    b = initial[features];
    train_serially(x, y, w, &b);
    bool close = true;
    for (int j = 0; j <= features; ++j) {
        const float expected = j < features ? w[j] : b;
        if (fabsf(got[j] - expected) > 1e-5f * (1 + fabsf(expected))) {
            cbt_fail(__FILE__, __LINE__, "parameter %d: %.9g after data-parallel training, %.9g serially", j,
                     (double)got[j], (double)expected);
            close = false;
        }
    }
    CHECK(on_every_rank(close));
    /* Training did something: the weights moved from where they started. */
    CHECK(fabsf(got[0] - initial[0]) > 1e-3f);
    cblob_blob_destroy(diffs);
    cblob_blob_destroy(params[0]);
    cblob_blob_destroy(params[1]);
    test_comm_close(&tc);
}
