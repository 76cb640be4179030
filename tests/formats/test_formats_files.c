/* SPDX-License-Identifier: BSD-2-Clause */
/* Files of any kind (ABI 1.2, issue 23): one open that reads a file once whatever it holds and
 * says what a file given by mistake is; the function that failed kept as data; the codecs'
 * defects (npz CRC, blob indices that sized allocations, keys that collided or were not UTF-8,
 * member names cut at 64 KiB, an empty npz); single .npy files; .npy folders that can never be
 * read back mixed or half written; net surgery that reports the blobs it keeps, and PyTorch's
 * shapes of V1 legacy blobs. */
/* memmem */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "support.h"

static char folder[512];
static char path_buffer[8][1024];

static const char *path_in(int slot, const char *name)
{
    snprintf(path_buffer[slot], sizeof path_buffer[slot], "%s/%s", folder, name);
    return path_buffer[slot];
}

static bool io_same(const char *path, const uint8_t *bytes, size_t size)
{
    size_t held = 0;
    uint8_t *now = ft_read_file(path, &held);
    const bool same = now != NULL && held == size && memcmp(now, bytes, size) == 0;
    free(now);
    return same;
}

static bool message_has(const char *part)
{
    return strstr(cblob_last_error_message(), part) != NULL;
}

/* A V2 model of the layers named, each with one float32 blob of `count` values (NULL names: none). */
static cblob_model *model_of(cblob_context *ctx, const char *const *names, const int *blobs, int layers)
{
    cblob_model *model = NULL;
    if (cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "net", &model) != CBLOB_OK)
        return NULL;
    for (int i = 0; i < layers; ++i) {
        const int64_t dims[1] = {3};
        cblob_blob *blob = blobs[i] ? ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, dims, i, false) : NULL;
        const cblob_status status = cblob_model_add_layer(model, names[i], "InnerProduct", &blob, blobs[i] ? 1 : 0);
        cblob_blob_destroy(blob);
        if (status != CBLOB_OK) {
            cblob_model_destroy(model);
            return NULL;
        }
    }
    return model;
}

static uint8_t *npz_of(const cblob_model *model, size_t *size)
{
    if (cblob_model_to_npz(model, 0, NULL, 0, size) != CBLOB_OK)
        return NULL;
    uint8_t *bytes = malloc(*size);
    if (bytes != NULL && cblob_model_to_npz(model, 0, bytes, *size, size) != CBLOB_OK) {
        free(bytes);
        return NULL;
    }
    return bytes;
}

/* ---- one open, whatever the file holds ------------------------------------------------------- */

TEST(every_kind_opens_once_by_its_bytes_not_its_name)
{
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static const char *const names[] = {"conv1", "ip1"};
    static const int blobs[] = {1, 1};
    cblob_model *model = model_of(ctx, names, blobs, 2);
    CHECK(model != NULL);
    const int64_t dims[2] = {2, 3};
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT64, 2, dims, 5, false);
    /* Every kind under a name that says another. */
    CHECK_OK(cblob_model_to_proto_file(model, 0, path_in(0, "net.npz")));
    CHECK_OK(cblob_blob_to_proto_file(blob, 0, path_in(1, "blob.caffemodel")));
    CHECK_OK(cblob_blob_vector_to_proto_file((cblob_blob *const[]){blob, blob}, 2, 0, path_in(2, "vector.npy")));
    CHECK_OK(cblob_blob_to_npy_file(blob, CBLOB_PART_DATA, path_in(3, "array.safetensors")));
    CHECK_OK(cblob_model_to_npz_file(model, 0, path_in(4, "archive.binaryproto")));
    CHECK_OK(cblob_model_to_safetensors_file(model, 0, path_in(5, "tensors.npz")));
    int64_t files = 0;
    CHECK_OK(cblob_model_to_npy_folder(model, 0, path_in(6, "folder"), &files));
    CHECK_EQ_INT((int)files, 2);
    const cblob_file_kind kinds[7] = {CBLOB_FILE_NET, CBLOB_FILE_BLOB, CBLOB_FILE_BLOB_VECTOR, CBLOB_FILE_NPY,
                                      CBLOB_FILE_NPZ, CBLOB_FILE_SAFETENSORS, CBLOB_FILE_NPY_FOLDER};
    const int64_t blob_counts[7] = {-1, 1, 2, 1, -1, -1, -1};
    for (int i = 0; i < 7; ++i) {
        cblob_file *file = NULL;
        cblob_file_kind kind = 0, detected = 0;
        CHECK_OK(cblob_file_open(ctx, path_buffer[i], 0, 0, &file));
        CHECK_OK(cblob_file_get_kind(file, &kind));
        CHECK_OK(cblob_file_detect(path_buffer[i], &detected));
        CHECK_MSG(kind == kinds[i] && detected == kinds[i], "%s: kind %d, detected %d", path_buffer[i], kind, detected);
        cblob_model *held = NULL;
        int64_t count = 0;
        if (blob_counts[i] < 0) {
            CHECK_OK(cblob_file_model(file, &held));
            CHECK_OK(cblob_model_num_layers(held, &count));
            CHECK_EQ_INT((int)count, 2);
            CHECK_STATUS(cblob_file_num_blobs(file, &count), CBLOB_ERR_STATE);
        } else {
            CHECK_OK(cblob_file_num_blobs(file, &count));
            CHECK_EQ_INT((int)count, (int)blob_counts[i]);
            cblob_blob *first = NULL;
            CHECK_OK(cblob_file_blob(file, 0, &first));
            CHECK(ft_same_values(first, blob, CBLOB_PART_DATA));
            cblob_blob_destroy(first);
            CHECK_STATUS(cblob_file_model(file, &held), CBLOB_ERR_STATE);
        }
        cblob_file_destroy(file);
    }
    cblob_blob_destroy(blob);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

TEST(a_descriptor_is_read_to_its_end_and_never_closed)
{
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t dims[1] = {4};
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_INT32, 1, dims, 2, false);
    CHECK_OK(cblob_blob_to_npy_file(blob, CBLOB_PART_DATA, path_in(0, "a.npy")));
    FILE *stream = fopen(path_buffer[0], "rb");
    CHECK(stream != NULL);
    cblob_file *file = NULL;
    CHECK_OK(cblob_file_open_fd(ctx, fileno(stream), "stdin", 0, 0, &file));
    cblob_file_kind kind = 0;
    CHECK_OK(cblob_file_get_kind(file, &kind));
    CHECK(kind == CBLOB_FILE_NPY);
    cblob_file_destroy(file);
    CHECK(lseek(fileno(stream), 0, SEEK_CUR) == 128 + 16); /* moved to the end, still open */
    CHECK_STATUS(cblob_file_open_fd(ctx, fileno(stream), "stdin", 0, 0, &file), CBLOB_ERR_PARSE);
    CHECK(message_has("stdin is empty"));
    fclose(stream);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* What people give by mistake is named, by every opener (the cblob program said so alone before). */
TEST(files_given_by_mistake_are_named_by_every_opener)
{
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static const struct {
        const char *name, *bytes;
        size_t size;
        const char *says;
    } files[] = {
        {"w.h5", "\x89HDF\r\n\x1a\n\0\0\0\0", 12, "HDF5"},
        {"w.caffemodel.gz", "\x1f\x8b\x08\0\0\0\0\0", 8, "gunzip"},
        {"w.pt", "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8", 12, "pickle"},
        {"cut.safetensors", "\x40\0\0\0\0\0\0\0{\"a\": ", 14, "truncated safetensors"},
        {"empty.caffemodel", "", 0, "is empty"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
        const char *path = path_in(0, files[i].name);
        CHECK(ft_write_file(path, files[i].bytes, files[i].size ? files[i].size : strlen(files[i].bytes)));
        cblob_file *file = NULL;
        cblob_model *model = NULL;
        cblob_blob *blob = NULL;
        CHECK_STATUS(cblob_file_open(ctx, path, 0, 0, &file), CBLOB_ERR_PARSE);
        CHECK_MSG(message_has(files[i].says) && message_has(path), "%s: %s", files[i].name, cblob_last_error_message());
        if (files[i].size == 0 && files[i].bytes[0] == '\0')
            continue; /* an empty message is an empty net or blob to Caffe's readers, as to these */
        CHECK_STATUS(cblob_model_open_file(ctx, path, &model), CBLOB_ERR_PARSE);
        CHECK_MSG(message_has(files[i].says), "cblob_model_open_file, %s: %s", files[i].name, cblob_last_error_message());
        CHECK_STATUS(cblob_blob_create_from_proto_file(ctx, path, &blob), CBLOB_ERR_PARSE);
        CHECK_MSG(message_has(files[i].says), "cblob_blob_create_from_proto_file, %s: %s", files[i].name,
                  cblob_last_error_message());
    }
    /* A prototxt: cblob_file_open reads it (a net, since 1.2); the binary readers name it. */
    const char *text = path_in(0, "deploy.prototxt");
    CHECK(ft_write_file(text, "name: \"LeNet\"\nlayer {\n  name: \"data\"\n}\n", 39));
    cblob_file *file = NULL;
    CHECK_OK(cblob_file_open(ctx, text, 0, 0, &file));
    cblob_file_kind kind = CBLOB_FILE_NPY;
    CHECK_OK(cblob_file_get_kind(file, &kind));
    CHECK(kind == CBLOB_FILE_NET);
    kind = CBLOB_FILE_NPY;
    CHECK_OK(cblob_file_detect(text, &kind));
    CHECK(kind == CBLOB_FILE_NET);
    cblob_file_destroy(file);
    cblob_model *text_model = NULL;
    CHECK_STATUS(cblob_model_open_file(ctx, text, &text_model), CBLOB_ERR_PARSE);
    CHECK_MSG(message_has("text-format prototxt") && message_has("cblob_model_open_prototxt_file"), "%s",
              cblob_last_error_message());
    cblob_blob *text_blob = NULL;
    CHECK_STATUS(cblob_blob_create_from_proto_file(ctx, text, &text_blob), CBLOB_ERR_PARSE);
    CHECK(message_has("text-format prototxt"));
    /* Another kind cblob reads, given to the reader of one kind: named too. */
    static const char *const names[] = {"conv1"};
    static const int blobs[] = {1};
    cblob_model *model = model_of(ctx, names, blobs, 1), *opened = NULL;
    CHECK(model != NULL);
    CHECK_OK(cblob_model_to_npz_file(model, 0, path_in(0, "w.npz")));
    CHECK_STATUS(cblob_model_open_safetensors_file(ctx, path_buffer[0], &opened), CBLOB_ERR_PARSE);
    CHECK_MSG(message_has("is a NumPy .npz file, not a safetensors file"), "%s", cblob_last_error_message());
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* The failing function is data, and it is the one the caller called (a refused safetensors file
 * named cblob_model_create before: the reader called the public entry point). */
TEST(the_failing_function_is_the_one_called)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static const char header[] = "{\"conv1.1\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    uint8_t bytes[8 + sizeof header - 1 + 4] = {0};
    bytes[0] = (uint8_t)(sizeof header - 1);
    memcpy(bytes + 8, header, sizeof header - 1);
    cblob_model *model = NULL;
    CHECK_STATUS(cblob_model_open_safetensors(ctx, bytes, sizeof bytes, &model), CBLOB_ERR_PARSE);
    CHECK_MSG(strcmp(cblob_last_error_function(), "cblob_model_open_safetensors") == 0, "function: %s",
              cblob_last_error_function());
    const char *detail = cblob_last_error_detail();
    CHECK(strstr(detail, "has blob 1 but") != NULL);
    char whole[1200];
    snprintf(whole, sizeof whole, "%s: %s", cblob_last_error_function(), detail);
    CHECK(strcmp(whole, cblob_last_error_message()) == 0);
    cblob_context_destroy(ctx);
}

/* ---- codec defects --------------------------------------------------------------------------- */

TEST(npz_member_crc_is_checked)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static const char *const names[] = {"conv1"};
    static const int blobs[] = {1};
    cblob_model *model = model_of(ctx, names, blobs, 1), *opened = NULL;
    CHECK(model != NULL);
    size_t size = 0;
    uint8_t *npz = npz_of(model, &size);
    CHECK(npz != NULL);
    CHECK_OK(cblob_model_open_npz(ctx, npz, size, &opened));
    cblob_model_destroy(opened);
    /* The last value's last byte: member data sits before the central directory. */
    const uint8_t *central = NULL;
    for (size_t i = 0; i + 4 <= size; ++i)
        if (memcmp(npz + i, "PK\x01\x02", 4) == 0) {
            central = npz + i;
            break;
        }
    CHECK(central != NULL);
    npz[central - npz - 1] ^= 0x40;
    CHECK_STATUS(cblob_model_open_npz(ctx, npz, size, &opened), CBLOB_ERR_PARSE);
    CHECK_MSG(message_has("CRC") || message_has("crc"), "%s", cblob_last_error_message());
    free(npz);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}

TEST(an_empty_npz_file_is_refused)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_model *model = NULL;
    const uint8_t none[1] = {0};
    CHECK_STATUS(cblob_model_open_npz(ctx, none, 0, &model), CBLOB_ERR_PARSE);
    /* An archive of no members (its end record) is a model of no layers, as numpy.savez writes one. */
    const uint8_t end[22] = {'P', 'K', 5, 6};
    CHECK_OK(cblob_model_open_npz(ctx, end, sizeof end, &model));
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}

/* A blob index sized an allocation and a loop before any check: "a.2000000000" in a 97-byte file. */
TEST(a_blob_index_past_the_layers_tensors_is_refused_before_it_sizes_anything)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static const char header[] = "{\"a.2000000000\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    uint8_t bytes[8 + sizeof header - 1 + 4] = {0};
    bytes[0] = (uint8_t)(sizeof header - 1);
    memcpy(bytes + 8, header, sizeof header - 1);
    cblob_model *model = NULL;
    CHECK_STATUS(cblob_model_open_safetensors(ctx, bytes, sizeof bytes, &model), CBLOB_ERR_PARSE);
    CHECK_MSG(message_has("blob 2000000000 but only 1 tensor"), "%s", cblob_last_error_message());
    cblob_context_destroy(ctx);
}

TEST(keys_that_would_collide_are_refused)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    /* A repeated "conv" at layer 3 is exported as conv@3, beside a real layer "conv@3". */
    static const char *const repeated[] = {"conv", "x", "y", "conv", "conv@3"};
    static const int blobs[] = {1, 0, 0, 1, 1};
    /* Two names that differ only in bytes that are not UTF-8 are one key. */
    static const char *const not_utf8[] = {"w\xff", "w\xfe"};
    static const int two[] = {1, 1};
    const struct {
        cblob_model *model;
        const char *says;
    } cases[] = {{model_of(ctx, repeated, blobs, 5), "conv@3"}, {model_of(ctx, not_utf8, two, 2), "w\xef\xbf\xbd"}};
    for (size_t i = 0; i < 2; ++i) {
        CHECK(cases[i].model != NULL);
        size_t size = 0;
        CHECK_STATUS(cblob_model_to_safetensors(cases[i].model, 0, NULL, 0, &size), CBLOB_ERR_INVALID_ARGUMENT);
        CHECK_MSG(message_has("would both be exported as key") && message_has(cases[i].says), "%s",
                  cblob_last_error_message());
        CHECK_STATUS(cblob_model_to_npz(cases[i].model, 0, NULL, 0, &size), CBLOB_ERR_INVALID_ARGUMENT);
        cblob_model_destroy(cases[i].model);
    }
    cblob_context_destroy(ctx);
}

/* Keys are UTF-8: a name that is not becomes U+FFFD in npz member names (NumPy could not open the
 * archive, flagged UTF-8 over bytes that are not) and comes back to its layer by it. */
TEST(names_that_are_not_utf8_export_as_utf8_and_come_back)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static const char *const names[] = {"bad\xff", "fine"};
    static const int blobs[] = {1, 1};
    cblob_model *model = model_of(ctx, names, blobs, 2), *weights = NULL;
    CHECK(model != NULL);
    size_t size = 0;
    uint8_t *npz = npz_of(model, &size);
    CHECK(npz != NULL);
    bool found = false;
    for (size_t i = 0; i + 10 <= size && !found; ++i)
        found = memcmp(npz + i, "bad\xef\xbf\xbd/0.npy", 12) == 0;
    CHECK(found);
    CHECK_OK(cblob_model_open_npz(ctx, npz, size, &weights));
    int64_t kept = -1;
    CHECK_OK(cblob_model_replace_blobs_with(model, weights, CBLOB_REPLACE_ALL, &kept));
    CHECK(kept == 0);
    free(npz);
    cblob_model_destroy(weights);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}

/* Member names as Python's zipfile (so numpy.load) reads them: UTF-8 when a member's flag bit 11
 * says so, and then it must be (zipfile refuses the archive); code page 437 when it does not. The
 * fuzzer's archive whose two unflagged names differed only in a byte past ASCII read as two layers
 * that the npz writer could not tell apart (both repaired to one U+FFFD key). */
static void set_zip_flags(uint8_t *zip, size_t size, bool utf8)
{
    for (size_t i = 0; i + 10 <= size; ++i) {
        size_t at = 0;
        if (memcmp(zip + i, "PK\3\4", 4) == 0)
            at = i + 7; /* the high byte of a local header's flags */
        else if (memcmp(zip + i, "PK\1\2", 4) == 0)
            at = i + 9; /* ... of a central entry's */
        if (at != 0)
            zip[at] = utf8 ? (uint8_t)(zip[at] | 0x08) : (uint8_t)(zip[at] & ~0x08);
    }
}

TEST(npz_member_names_are_read_as_zipfile_reads_them)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static const char *const names[] = {"caf\xc3\xa9"}; /* "café" */
    static const int blobs[] = {1};
    cblob_model *model = model_of(ctx, names, blobs, 1), *back = NULL;
    CHECK(model != NULL);
    size_t size = 0;
    uint8_t *npz = npz_of(model, &size);
    CHECK(npz != NULL);
    const char *name = NULL;
    /* As written: flagged UTF-8, the name as it is. */
    CHECK_OK(cblob_model_open_npz(ctx, npz, size, &back));
    CHECK_OK(cblob_model_layer_name(back, 0, &name));
    CHECK(strcmp(name, "caf\xc3\xa9") == 0);
    cblob_model_destroy(back);
    /* Unflagged: code page 437, as b"caf\xc3\xa9".decode("cp437") == "caf\u251c\u2310". */
    set_zip_flags(npz, size, false);
    CHECK_OK(cblob_model_open_npz(ctx, npz, size, &back));
    CHECK_OK(cblob_model_layer_name(back, 0, &name));
    CHECK_MSG(strcmp(name, "caf\xe2\x94\x9c\xe2\x8c\x90") == 0, "%s", name);
    cblob_model_destroy(back);
    /* Flagged over bytes that are not UTF-8: refused, as zipfile refuses it. */
    set_zip_flags(npz, size, true);
    for (size_t i = 0; i + 5 <= size; ++i)
        if (memcmp(npz + i, "caf\xc3\xa9", 5) == 0)
            npz[i + 4] = '(';
    back = (cblob_model *)ctx;
    CHECK_STATUS(cblob_model_open_npz(ctx, npz, size, &back), CBLOB_ERR_PARSE);
    CHECK(back == (cblob_model *)ctx);
    CHECK(message_has("marked UTF-8"));
    free(npz);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}

TEST(npz_member_names_over_64_kib_are_refused_not_cut)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    char *name = malloc(70001);
    CHECK(name != NULL);
    memset(name, 'n', 70000);
    name[70000] = '\0';
    const char *const names[] = {name};
    static const int blobs[] = {1};
    cblob_model *model = model_of(ctx, names, blobs, 1);
    CHECK(model != NULL);
    size_t size = 0;
    CHECK_STATUS(cblob_model_to_npz(model, 0, NULL, 0, &size), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(message_has("at most 65531"));
    cblob_model_destroy(model);
    free(name);
    cblob_context_destroy(ctx);
}

/* ---- .npy files and folders ------------------------------------------------------------------ */

TEST(one_npy_file_round_trips_with_numpys_layout)
{
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t dims[3] = {2, 3, 4};
    for (int d = 0; d < FT_DTYPES; ++d) {
        cblob_blob *blob = ft_blob(ctx, ft_dtypes[d], 3, dims, d, true), *back = NULL;
        size_t size = 0;
        CHECK_OK(cblob_blob_to_npy(blob, CBLOB_PART_DIFF, NULL, 0, &size));
        CHECK(size % 64 == 0 || size > 128); /* values start at a multiple of 64 */
        CHECK_OK(cblob_blob_to_npy_file(blob, CBLOB_PART_DIFF, path_in(0, "a.npy")));
        cblob_file *file = NULL;
        CHECK_OK(cblob_file_open(ctx, path_buffer[0], 0, 0, &file));
        CHECK_OK(cblob_file_blob(file, 0, &back));
        cblob_dtype dtype = 0;
        CHECK_OK(cblob_blob_dtype(back, &dtype));
        CHECK(dtype == ft_dtypes[d] && ft_shape_is(back, 3, dims) && ft_blob_holds(back, CBLOB_PART_DATA, d + 1));
        cblob_blob_destroy(back);
        cblob_file_destroy(file);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* A conversion into a folder that fails half way leaves no index.json (it is removed first and
 * written last), so the folder is never read back as a whole one; a file that is not what
 * index.json lists (an earlier conversion's) is refused. */
TEST(a_npy_folder_is_never_read_back_mixed_or_half_written)
{
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static const char *const names[] = {"conv1", "conv2", "conv3"};
    static const int blobs[] = {1, 1, 1};
    cblob_model *model = model_of(ctx, names, blobs, 3), *read = NULL;
    CHECK(model != NULL);
    const char *dir = path_in(0, "weights");
    int64_t files = 0;
    CHECK_OK(cblob_model_to_npy_folder(model, 0, dir, &files));
    cblob_file *file = NULL;
    CHECK_OK(cblob_file_open(ctx, dir, 0, 0, &file));
    cblob_file_destroy(file);
    /* A second conversion that fails part way (a folder stands where its second file goes)
     * leaves the folder's files and index.json as they were: it writes into a staging folder and
     * puts files in place only once every one is written. */
    size_t index_size = 0, first_size = 0;
    uint8_t *index_before = ft_read_file(path_in(1, "weights/index.json"), &index_size);
    uint8_t *first_before = ft_read_file(path_in(2, "weights/conv1_0.npy"), &first_size);
    CHECK(index_before != NULL && first_before != NULL);
    CHECK(unlink(path_in(3, "weights/conv2_0.npy")) == 0 && mkdir(path_buffer[3], 0700) == 0);
    static const char *const renamed[] = {"conv1", "conv2", "conv3"};
    cblob_model *other_values = model_of(ctx, renamed, blobs, 3);
    CHECK(other_values != NULL);
    for (int64_t i = 0; i < 3; ++i) { /* other values, the same shapes */
        cblob_blob *changed = NULL;
        CHECK_OK(cblob_model_layer_blob(other_values, i, 0, &changed));
        CHECK_OK(cblob_blob_scale(changed, CBLOB_PART_DATA, 2.0));
        cblob_blob_destroy(changed);
    }
    CHECK_STATUS(cblob_model_to_npy_folder(other_values, 0, dir, &files), CBLOB_ERR_IO);
    cblob_model_destroy(other_values);
    CHECK(io_same(path_buffer[1], index_before, index_size) && io_same(path_buffer[2], first_before, first_size));
    CHECK(rmdir(path_buffer[3]) == 0);
    free(index_before);
    free(first_before);
    /* Without its index.json (an interrupted writer of 1.1 left none; a folder of one's own .npy
     * files has none), a folder is read only by name, when asked: conv2's blob is missing. */
    CHECK(unlink(path_buffer[1]) == 0);
    CHECK_STATUS(cblob_file_open(ctx, dir, 0, 0, &file), CBLOB_ERR_PARSE);
    CHECK_MSG(message_has("has no index.json"), "%s", cblob_last_error_message());
    CHECK_OK(cblob_file_open(ctx, dir, CBLOB_OPEN_NPY_BY_NAME, 0, &file));
    CHECK_OK(cblob_file_model(file, &read));
    int64_t kept = -1;
    CHECK_STATUS(cblob_model_replace_blobs_with(model, read, CBLOB_REPLACE_ALL, &kept), CBLOB_ERR_SHAPE);
    CHECK_MSG(message_has("conv2 blob 0: no values in the weights"), "%s", cblob_last_error_message());
    CHECK_OK(cblob_model_replace_blobs_with(model, read, 0, &kept));
    CHECK(kept == 1);
    cblob_file_destroy(file);
    /* Whole again; then one file replaced by another of another shape: refused against the index. */
    CHECK_OK(cblob_model_to_npy_folder(model, 0, dir, &files));
    const int64_t dims[2] = {1, 3};
    cblob_blob *other = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 2, dims, 9, false);
    CHECK_OK(cblob_blob_to_npy_file(other, CBLOB_PART_DATA, path_in(1, "weights/conv3_0.npy")));
    CHECK_STATUS(cblob_file_open(ctx, dir, 0, 0, &file), CBLOB_ERR_PARSE);
    CHECK_MSG(message_has("conv3_0.npy does not hold what index.json lists"), "%s", cblob_last_error_message());
    cblob_blob_destroy(other);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* ---- net surgery and PyTorch's shapes -------------------------------------------------------- */

TEST(torch_names_of_a_v1_net_have_pytorchs_shapes_and_come_back)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_model *model = NULL, *weights = NULL;
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V1, "v1", &model));
    const int64_t weight_dims[4] = {1, 1, 4, 6}, bias_dims[4] = {1, 1, 1, 4};
    cblob_blob *ip[2] = {ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 4, weight_dims, 1, false),
                         ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 4, bias_dims, 2, false)};
    CHECK_OK(cblob_model_add_layer(model, "ip1", "INNER_PRODUCT", ip, 2));
    size_t size = 0;
    CHECK_OK(cblob_model_to_safetensors(model, CBLOB_EXPORT_TORCH_NAMES, NULL, 0, &size));
    uint8_t *bytes = malloc(size);
    CHECK(bytes != NULL);
    CHECK_OK(cblob_model_to_safetensors(model, CBLOB_EXPORT_TORCH_NAMES, bytes, size, &size));
    CHECK(memmem(bytes, size, "\"ip1.weight\":{\"dtype\":\"F32\",\"shape\":[4,6]", 40) != NULL);
    CHECK(memmem(bytes, size, "\"ip1.bias\":{\"dtype\":\"F32\",\"shape\":[4]", 36) != NULL);
    CHECK_OK(cblob_model_open_safetensors(ctx, bytes, size, &weights));
    int64_t kept = -1;
    CHECK_OK(cblob_model_replace_blobs_with(model, weights, CBLOB_REPLACE_ALL, &kept));
    CHECK(kept == 0);
    cblob_blob *back = NULL;
    CHECK_OK(cblob_model_layer_blob(model, 0, 0, &back));
    CHECK(ft_shape_is(back, 4, weight_dims) && ft_blob_holds(back, CBLOB_PART_DATA, 1));
    cblob_blob_destroy(back);
    free(bytes);
    cblob_model_destroy(weights);
    cblob_blob_destroy(ip[0]);
    cblob_blob_destroy(ip[1]);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}

/* A stream is identified from its head: a pipe of zeros is refused after its first 64 KiB, not
 * read until memory runs out (1.1 read standard input without bound). */
TEST(a_stream_of_no_kind_is_refused_after_its_head)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    int ends[2];
    CHECK(pipe(ends) == 0);
    const pid_t writer = fork();
    CHECK(writer >= 0);
    if (writer == 0) {
        close(ends[0]);
        signal(SIGPIPE, SIG_IGN);
        static const uint8_t zeros[4096];
        long long written = 0;
        while (written < (1ll << 34)) {
            const ssize_t n = write(ends[1], zeros, sizeof zeros);
            if (n <= 0)
                break;
            written += n;
        }
        _exit(written < (4ll << 20) ? 0 : 1); /* it stopped within 4 MiB: the reader let go */
    }
    close(ends[1]);
    cblob_file *file = NULL;
    CHECK_STATUS(cblob_file_open_fd(ctx, ends[0], "standard input", 0, 0, &file), CBLOB_ERR_PARSE);
    CHECK(message_has("standard input is not a protobuf file"));
    close(ends[0]);
    int status = 0;
    CHECK(waitpid(writer, &status, 0) == writer && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cblob_context_destroy(ctx);
}
