/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob convert: Caffe files to .npy files, and .npy files to a .binaryproto. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "npy.h"
#include "tool.h"

#define CONVERT_USAGE \
    "usage: cblob convert FILE --to npy DIR | cblob convert FILE.npy... [--vector] --to binaryproto OUT"

/* ---- Caffe file to .npy ------------------------------------------------------------------ */

/* A layer name as a file name: characters other than letters, digits, '.', '-' and '_' (a '/'
 * in "inception_3a/1x1", say) become '_'. A name already taken by an earlier layer gets the
 * layer's index appended, so no file overwrites another. */
static void file_stem(const tool_file *file, int64_t layer, char *stem, size_t size)
{
    const char *name = file->layers[layer].name;
    if (name[0] == '\0') {
        snprintf(stem, size, "layer%" PRId64, layer);
        return;
    }
    size_t used = 0;
    for (const char *p = name; *p != '\0' && used + 1 < size; ++p) {
        const char c = *p;
        const int safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                         c == '-' || c == '_';
        stem[used++] = safe ? c : '_';
    }
    stem[used] = '\0';
    if (strcmp(stem, ".") == 0 || strcmp(stem, "..") == 0)
        stem[0] = '_';
    for (int64_t earlier = 0; earlier < layer; ++earlier) {
        char other[256];
        file_stem(file, earlier, other, sizeof other);
        if (strcmp(other, stem) == 0) {
            snprintf(stem + used, size - used, "_L%" PRId64, layer);
            return;
        }
    }
}

static int make_folder(const char *folder)
{
    if (mkdir(folder, 0777) == 0)
        return TOOL_OK;
    struct stat info;
    if (errno == EEXIST && stat(folder, &info) == 0 && S_ISDIR(info.st_mode))
        return TOOL_OK;
    return tool_fail(TOOL_FAILED, "convert", folder, "cannot create the folder: %s",
                     errno == EEXIST ? "a file of that name exists" : strerror(errno));
}

/* Writes one blob's data, and its diff when it has one. */
static int write_blob(const char *folder, const char *stem, int64_t index, cblob_blob *blob, int64_t *written)
{
    const bool diff = tool_has_diff(blob);
    for (int part = 0; part <= (diff ? 1 : 0); ++part) {
        char path[4096], error[512];
        snprintf(path, sizeof path, "%s/%s_%" PRId64 "%s.npy", folder, stem, index, part ? "_diff" : "");
        if (npy_write(path, blob, part, error, sizeof error) != 0)
            return tool_fail(TOOL_FAILED, "convert", path, "%s", error);
        ++*written;
    }
    return TOOL_OK;
}

static int to_npy(cblob_context *context, const char *input, const char *folder)
{
    tool_file file;
    int status = tool_file_load(context, "convert", input, &file);
    if (status == TOOL_OK)
        status = make_folder(folder);
    int64_t written = 0;
    for (int64_t i = 0; status == TOOL_OK && i < file.num_layers; ++i) {
        char stem[256];
        file_stem(&file, i, stem, sizeof stem);
        tool_progress("convert", i + 1, file.num_layers, file.layers[i].name);
        for (int64_t j = 0; status == TOOL_OK && j < file.layers[i].num_blobs; ++j)
            status = write_blob(folder, stem, j, file.layers[i].blobs[j], &written);
    }
    for (int64_t j = 0; status == TOOL_OK && j < file.num_blobs; ++j)
        status = write_blob(folder, "blob", j, file.blobs[j], &written);
    tool_progress_done();
    if (status == TOOL_OK)
        printf("wrote %" PRId64 " .npy file%s to %s\n", written, written == 1 ? "" : "s", folder);
    tool_file_free(&file);
    return status;
}

/* ---- .npy files to a .binaryproto ------------------------------------------------------- */

static int to_binaryproto(cblob_context *context, char **inputs, int num_inputs, bool vector, const char *output)
{
    cblob_blob **blobs = calloc((size_t)num_inputs, sizeof *blobs);
    if (blobs == NULL)
        return tool_fail(TOOL_FAILED, "convert", output, "out of memory");
    int status = TOOL_OK, made = 0;
    for (; status == TOOL_OK && made < num_inputs; ++made) {
        char error[512];
        tool_progress("convert", made + 1, num_inputs, inputs[made]);
        const cblob_status read = npy_read(context, inputs[made], &blobs[made], error, sizeof error);
        if (read != CBLOB_OK)
            status = tool_fail(read == CBLOB_ERR_OUT_OF_MEMORY ? TOOL_FAILED : TOOL_BAD_INPUT, "convert", inputs[made],
                               "%s", error);
    }
    tool_progress_done();
    if (status == TOOL_OK) {
        const cblob_status written = vector || num_inputs > 1
                                         ? cblob_blob_vector_to_proto_file(blobs, num_inputs, 0, output)
                                         : cblob_blob_to_proto_file(blobs[0], 0, output);
        if (written != CBLOB_OK)
            status = tool_fail(TOOL_FAILED, "convert", output, "%s", tool_library_message_about(output));
        else
            printf("wrote %s (%s of %d blob%s)\n", output, vector || num_inputs > 1 ? "BlobProtoVector" : "BlobProto",
                   num_inputs, num_inputs == 1 ? "" : "s");
    }
    for (int i = 0; i < made; ++i)
        cblob_blob_destroy(blobs[i]);
    free(blobs);
    return status;
}

/* ---- the command ----------------------------------------------------------------------- */

int command_convert(int argc, char **argv)
{
    char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    if (inputs == NULL)
        return tool_fail(TOOL_FAILED, "convert", "arguments", "out of memory");
    int num_inputs = 0;
    const char *format = NULL, *destination = NULL;
    bool vector = false;
    int status = TOOL_OK;
    for (int i = 0; i < argc && status == TOOL_OK; ++i) {
        if (strcmp(argv[i], "--to") == 0 && i + 2 < argc && format == NULL) {
            format = argv[++i];
            destination = argv[++i];
        } else if (strcmp(argv[i], "--vector") == 0) {
            vector = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            status = tool_fail(TOOL_BAD_INPUT, "convert", argv[i], "unexpected argument (%s)", CONVERT_USAGE);
        } else {
            inputs[num_inputs++] = argv[i];
        }
    }
    if (status == TOOL_OK && (format == NULL || num_inputs == 0))
        status = tool_fail(TOOL_BAD_INPUT, "convert", "usage", "%s", CONVERT_USAGE);
    cblob_context *context = NULL;
    if (status == TOOL_OK && cblob_context_create(&context) != CBLOB_OK)
        status = tool_fail(TOOL_FAILED, "convert", "context", "%s", tool_library_message());
    if (status == TOOL_OK) {
        if (strcmp(format, "npy") == 0 && num_inputs == 1 && !vector)
            status = to_npy(context, inputs[0], destination);
        else if (strcmp(format, "npy") == 0)
            status = tool_fail(TOOL_BAD_INPUT, "convert", "usage", "--to npy takes one Caffe file (%s)", CONVERT_USAGE);
        else if (strcmp(format, "binaryproto") == 0)
            status = to_binaryproto(context, inputs, num_inputs, vector, destination);
        else
            status = tool_fail(TOOL_BAD_INPUT, "convert", format, "unknown format (npy or binaryproto)");
    }
    cblob_context_destroy(context);
    free(inputs);
    return status;
}
