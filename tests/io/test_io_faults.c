/* SPDX-License-Identifier: BSD-2-Clause */
/* Every writer, with every file operation failing in turn (issue 27; SQLite's I/O error tests are
 * the model): the Nth open, write, fsync or rename fails with ENOSPC or EIO, is interrupted
 * (EINTR) or writes short, for N = 1, 2, ... until the writer makes no more such calls. After
 * each, the target holds the whole old file or the whole new one, never a mix; no temporary is
 * left; a failure says which step failed; an interruption or a short write is retried and
 * succeeds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault.h"
#include "harness.h"
#include "io_support.h"
#include "support.h"

typedef struct fixture {
    cblob_context *ctx;
    cblob_model *model;
    cblob_blob *blob;
} fixture;

static bool fixture_make(fixture *fx)
{
    *fx = (fixture){0};
    const int64_t dims[2] = {64, 300};
    if (cblob_context_create(&fx->ctx) != CBLOB_OK || cblob_model_create(fx->ctx, CBLOB_NET_FORMAT_V2, "n", &fx->model))
        return false;
    fx->blob = ft_blob(fx->ctx, CBLOB_DTYPE_FLOAT32, 2, dims, 3, true);
    return fx->blob != NULL && cblob_model_add_layer(fx->model, "ip", "InnerProduct", &fx->blob, 1) == CBLOB_OK;
}

static void fixture_free(fixture *fx)
{
    cblob_blob_destroy(fx->blob);
    cblob_model_destroy(fx->model);
    cblob_context_destroy(fx->ctx);
}

typedef cblob_status writer_fn(const fixture *fx, const char *path);

static cblob_status write_blob_proto(const fixture *fx, const char *path)
{
    return cblob_blob_to_proto_file(fx->blob, 1, path);
}

static cblob_status write_vector(const fixture *fx, const char *path)
{
    return cblob_blob_vector_to_proto_file((cblob_blob *const[]){fx->blob, fx->blob}, 2, 1, path);
}

static cblob_status write_caffemodel(const fixture *fx, const char *path)
{
    return cblob_model_to_proto_file(fx->model, 1, path);
}

static cblob_status write_npz(const fixture *fx, const char *path)
{
    return cblob_model_to_npz_file(fx->model, CBLOB_EXPORT_DIFF, path);
}

static cblob_status write_safetensors(const fixture *fx, const char *path)
{
    return cblob_model_to_safetensors_file(fx->model, CBLOB_EXPORT_DIFF, path);
}

static cblob_status write_npy(const fixture *fx, const char *path)
{
    return cblob_blob_to_npy_file(fx->blob, CBLOB_PART_DIFF, path);
}

static const struct {
    const char *name;
    writer_fn *write;
} writers[] = {{"BlobProto", write_blob_proto}, {"BlobProtoVector", write_vector}, {"caffemodel", write_caffemodel},
               {"npz", write_npz},             {"safetensors", write_safetensors}, {"npy", write_npy}};

static const struct {
    cb_fault_step step;
    const char *name;
} steps[] = {{CB_FAULT_OPEN, "open"}, {CB_FAULT_WRITE, "write"}, {CB_FAULT_FSYNC, "fsync"},
             {CB_FAULT_RENAME, "rename"}, {CB_FAULT_IO, "any"}};

static const struct {
    int error;
    const char *name;
} errors[] = {{ENOSPC, "ENOSPC"}, {EIO, "EIO"}, {EINTR, "EINTR"}, {CB_FAULT_SHORT, "a short write"}};

/* The writer over an old file, with the nth use of step failing: old or new, whole, no temporary. */
static bool one_failure(const fixture *fx, int w, int s, int e, int64_t nth, const char *path, const uint8_t *old,
                        size_t old_size, const uint8_t *new_bytes, size_t new_size, bool *done)
{
    if (!io_write_file(path, old, old_size))
        return false;
    cb_fault_arm(steps[s].step, nth, errors[e].error, false);
    const cblob_status status = writers[w].write(fx, path);
    const bool fired = cb_fault_fired(steps[s].step);
    cb_fault_arm(steps[s].step, 0, 0, false);
    *done = !fired;
    const char *folder_end = strrchr(path, '/');
    char folder[512];
    snprintf(folder, sizeof folder, "%.*s", (int)(folder_end - path), path);
    const bool retried = errors[e].error == EINTR || errors[e].error == CB_FAULT_SHORT;
    bool ok = io_count_temporaries(folder) == 0;
    if (status == CBLOB_OK)
        ok = ok && io_file_holds(path, new_bytes, new_size);
    else
        ok = ok && !retried && status == CBLOB_ERR_IO && io_file_holds(path, old, old_size) &&
             strstr(cblob_last_error_message(), strerror(errors[e].error)) != NULL;
    if (!ok)
        fprintf(stderr, "%s, %s #%lld fails with %s: %s (%s)\n", writers[w].name, steps[s].name, (long long)nth,
                errors[e].name, cblob_status_name(status), cblob_last_error_message());
    return ok;
}

TEST(every_writer_leaves_the_old_file_or_the_new_one_at_every_failure)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    fixture fx;
    CHECK(fixture_make(&fx));
    const char *path = io_path(0, folder, "out"), *fresh = io_path(1, folder, "fresh");
    static const uint8_t old[] = "the old file, which a failed save must leave whole";
    int failures_made = 0;
    for (int w = 0; w < (int)(sizeof writers / sizeof writers[0]); ++w) {
        CHECK_OK(writers[w].write(&fx, fresh)); /* what a save that succeeds writes */
        size_t new_size = 0;
        uint8_t *new_bytes = ft_read_file(fresh, &new_size);
        CHECK(new_bytes != NULL);
        for (int s = 0; s < (int)(sizeof steps / sizeof steps[0]); ++s)
            for (int e = 0; e < (int)(sizeof errors / sizeof errors[0]); ++e) {
                bool done = false;
                for (int64_t nth = 1; !done && nth < 10000; ++nth, ++failures_made)
                    CHECK(one_failure(&fx, w, s, e, nth, path, old, sizeof old, new_bytes, new_size, &done));
                CHECK_MSG(done, "%s: %s never ran out of uses", writers[w].name, steps[s].name);
            }
        free(new_bytes);
    }
    CHECK_MSG(failures_made > 100, "only %d failures were made", failures_made);
    fixture_free(&fx);
    io_remove_tree(folder);
}

/* A .npy folder over an earlier one, with each step failing in turn: read back, it is the old
 * model or the new one, or it is refused for lacking its index (the index goes first and comes
 * back last); never a mix; no staging folder or temporary left. A failure after the last move
 * leaves the new folder, and its error says the files are in place. */
static bool folder_holds(cblob_context *ctx, const char *folder, const fixture *expected)
{
    cblob_file *file = NULL;
    cblob_model *model = NULL;
    cblob_blob *blob = NULL;
    bool same = cblob_file_open(ctx, folder, 0, 0, &file) == CBLOB_OK && cblob_file_model(file, &model) == CBLOB_OK &&
                cblob_model_layer_blob(model, 0, 0, &blob) == CBLOB_OK && ft_same_values(blob, expected->blob, CBLOB_PART_DATA);
    cblob_blob_destroy(blob);
    cblob_file_destroy(file);
    return same;
}

TEST(a_npy_folder_is_the_old_one_the_new_one_or_refused_at_every_failure)
{
    char root[512];
    CHECK(io_temp_folder(root, sizeof root));
    fixture old_fx, new_fx;
    CHECK(fixture_make(&old_fx) && fixture_make(&new_fx));
    CHECK_OK(cblob_blob_scale(new_fx.blob, CBLOB_PART_DATA, 2.0));
    const char *folder = io_path(0, root, "weights");
    int failures_made = 0;
    for (int s = 0; s < (int)(sizeof steps / sizeof steps[0]); ++s)
        for (int e = 0; e < 2; ++e) { /* ENOSPC, EIO */
            bool done = false;
            for (int64_t nth = 1; !done && nth < 10000; ++nth, ++failures_made) {
                int64_t files = 0;
                io_remove_tree(folder);
                CHECK_OK(cblob_model_to_npy_folder(old_fx.model, CBLOB_EXPORT_DIFF, folder, &files));
                cb_fault_arm(steps[s].step, nth, errors[e].error, false);
                const cblob_status status = cblob_model_to_npy_folder(new_fx.model, CBLOB_EXPORT_DIFF, folder, &files);
                const bool in_place = strstr(cblob_last_error_message(), "the new files are in place") != NULL;
                done = !cb_fault_fired(steps[s].step);
                cb_fault_arm(steps[s].step, 0, 0, false);
                cblob_file *file = NULL;
                const bool refused = cblob_file_open(old_fx.ctx, folder, 0, 0, &file) == CBLOB_ERR_PARSE &&
                                     strstr(cblob_last_error_message(), "has no index.json") != NULL;
                cblob_file_destroy(file);
                const bool as_new = folder_holds(old_fx.ctx, folder, &new_fx);
                const bool as_old = folder_holds(old_fx.ctx, folder, &old_fx);
                CHECK_MSG(status == CBLOB_OK ? as_new : (as_old || refused || (as_new && in_place)),
                          "%s #%lld with %s: %s; the folder is %s", steps[s].name, (long long)nth, errors[e].name,
                          cblob_status_name(status), as_new ? "new" : as_old ? "old" : refused ? "refused" : "MIXED");
                CHECK_EQ_INT(io_count_temporaries(folder), 0);
            }
            CHECK(done);
        }
    CHECK_MSG(failures_made > 20, "only %d failures were made", failures_made);
    fixture_free(&old_fx);
    fixture_free(&new_fx);
    io_remove_tree(root);
}
