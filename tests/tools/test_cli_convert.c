/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob convert never destroys an input (issue 23): the grammar that cannot swallow an input
 * (-o OUT, --to FORMAT one word, the old spelling only where unambiguous), an output that is an
 * input refused (by its name, through a symbolic link, through a hard link), an output name that
 * names another format refused, an existing file of another format replaced only with --force;
 * and what convert writes: one .npy for one blob, the blobs the weights lack reported, a net's
 * definition as a prototxt. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_support.h"
#include "harness.h"
#include "io_support.h"
#include "support.h"

#define LENET CBLOB_CAFFE_DATA_DIR "/lenet_iter_10000.caffemodel"
#define MEAN CBLOB_CAFFE_DATA_DIR "/cifar10_mean.binaryproto"
#define SAMPLE CBLOB_SOURCE_DIR "/samples/tiny_lenet.caffemodel"

/* A private copy of a real file, and its bytes to compare with afterwards. */
static bool copy_of(const char *from, const char *to, uint8_t **bytes, size_t *size)
{
    *bytes = ft_read_file(from, size);
    return *bytes != NULL && io_write_file(to, *bytes, *size);
}

TEST(an_input_is_never_written_over)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *model = io_path(0, folder, "lenet.caffemodel"), *npz = io_path(1, folder, "lenet.npz");
    uint8_t *original = NULL;
    size_t size = 0;
    CHECK(copy_of(LENET, model, &original, &size));
    cli_result r;
    CHECK(CLI(&r, "convert", model, "-o", npz));
    CHECK_MSG(r.status == 0, "%s", r.err);
    cli_result_free(&r);
    size_t npz_size = 0;
    uint8_t *npz_bytes = ft_read_file(npz, &npz_size);
    CHECK(npz_bytes != NULL);
    const char *hard = io_path(2, folder, "hard.npz"), *soft = io_path(3, folder, "soft.npz");
    CHECK(link(model, hard) == 0 && symlink("lenet.caffemodel", soft) == 0);
    /* The format before the input, after an earlier export left lenet.npz (1.1 wrote a zip over
     * lenet.caffemodel); the input named as the output; through a hard link and a symbolic link. */
    const char *const cases[][10] = {
        {"convert", "--to", "npz", model, npz},
        {"convert", model, "--to", "npz", model},
        {"convert", model, "-o", model, "--to", "npz"},
        {"convert", model, "--to", "npz", hard},
        {"convert", model, "--to", "npz", soft},
        {"convert", npz, "--like", model, "--to", "caffemodel", model},
        {"convert", npz, "--like", model, "--to", "caffemodel", "-o", soft, "--force"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        CHECK(cli_run(&r, NULL, 30, cases[i]));
        CHECK_MSG(r.status == 2 && r.out[0] == '\0', "case %zu: exit %d, %s", i, r.status, r.err);
        CHECK_MSG(i == 0 ? CLI_ERROR_HAS(&r, "which is the output", "-o")
                         : CLI_ERROR_HAS(&r, "(the same file): cblob never writes over an input"),
                  "case %zu: %s", i, r.err);
        cli_result_free(&r);
        CHECK_MSG(io_file_holds(model, original, size), "case %zu changed the input", i);
        CHECK_MSG(io_file_holds(npz, npz_bytes, npz_size), "case %zu changed lenet.npz", i);
        CHECK_EQ_INT(io_count_temporaries(folder), 0);
    }
    free(npz_bytes);
    free(original);
    io_remove_tree(folder);
}

TEST(an_output_name_says_its_format_and_other_formats_need_force)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *other = io_path(0, folder, "other.caffemodel"), *out = io_path(1, folder, "out.npz");
    uint8_t *original = NULL;
    size_t size = 0;
    CHECK(copy_of(SAMPLE, other, &original, &size));
    cli_result r;
    /* The extension names another format than --to: nothing is written. */
    CHECK(CLI(&r, "convert", LENET, "--to", "npz", io_path(2, folder, "w.safetensors")));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "w.safetensors", "its name says safetensors", "--to npz"));
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", LENET, "-o", io_path(2, folder, "w.prototxt"), "--to", "npz"));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "its name says prototxt", "--to npz"));
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", LENET, "-o", io_path(2, folder, "w.onnx"), "--to", "npz"));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "a format cblob does not write"));
    cli_result_free(&r);
    CHECK_EQ_INT(io_count_entries(folder), 1);
    /* A Caffe model replaced by a zip: only with --force. */
    CHECK(rename(other, out) == 0);
    CHECK(CLI(&r, "convert", LENET, "--to", "npz", out));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "holds a Caffe net (.caffemodel)", "--force"));
    cli_result_free(&r);
    CHECK(io_file_holds(out, original, size));
    CHECK(CLI(&r, "convert", LENET, "--to", "npz", out, "--force"));
    CHECK_MSG(r.status == 0, "%s", r.err);
    cli_result_free(&r);
    CHECK(!io_file_holds(out, original, size));
    /* An npz over an npz needs nothing, and -o names the format by itself. */
    CHECK(CLI(&r, "convert", SAMPLE, "-o", out));
    CHECK_MSG(r.status == 0 && strstr(r.out, "(npz)") != NULL, "%s", r.err);
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", SAMPLE, "-o", io_path(2, folder, "noext")));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "--to FORMAT is missing"));
    cli_result_free(&r);
    free(original);
    io_remove_tree(folder);
}

/* A BlobProto to --to npy mean.npy writes one .npy file (a folder named mean.npy before), also to
 * standard output; a net's blobs go in a folder. */
TEST(one_blob_to_npy_is_one_file)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *npy = io_path(0, folder, "mean.npy");
    cli_result r, piped;
    CHECK(CLI(&r, "convert", MEAN, "--to", "npy", npy));
    CHECK_MSG(r.status == 0, "%s", r.err);
    cli_result_free(&r);
    struct stat info;
    CHECK(stat(npy, &info) == 0 && S_ISREG(info.st_mode));
    CHECK(CLI(&piped, "convert", MEAN, "--to", "npy", "-"));
    CHECK(piped.status == 0 && io_file_holds(npy, piped.out, piped.out_size));
    CHECK(memcmp(piped.out, "\x93NUMPY\x01\x00", 8) == 0 && strstr(piped.out + 10, "'shape': (1, 3, 32, 32)") != NULL);
    cli_result_free(&piped);
    CHECK(CLI(&r, "convert", LENET, "--to", "npy", io_path(1, folder, "lenet.npy")));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "a .npy file holds one blob; name a folder"));
    cli_result_free(&r);
    io_remove_tree(folder);
}

/* --like with weights that lack blobs of the base: refused, listing them, unless --allow-missing
 * (which says how many kept their values). 1.1 kept them silently. */
TEST(blobs_the_weights_lack_are_reported)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *npy = io_path(0, folder, "w"), *out = io_path(1, folder, "out.caffemodel");
    cli_result r;
    CHECK(CLI(&r, "convert", SAMPLE, "--to", "npy", npy));
    CHECK(r.status == 0);
    cli_result_free(&r);
    CHECK(unlink(io_path(2, npy, "ip2_1.npy")) == 0);
    CHECK(unlink(io_path(2, npy, "index.json")) == 0);
    CHECK(CLI(&r, "convert", npy, "--npy-names", "--like", SAMPLE, "--to", "caffemodel", out));
    CHECK_MSG(r.status == 2 && CLI_ERROR_HAS(&r, "ip2 blob 1: no values in the weights", "--allow-missing",
                                             "nothing was written"), "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    CHECK(access(out, F_OK) != 0 && errno == ENOENT);
    CHECK(CLI(&r, "convert", npy, "--npy-names", "--allow-missing", "--like", SAMPLE, "--to", "caffemodel", out));
    CHECK_MSG(r.status == 0 && CLI_ERROR_HAS(&r, "1 blob of", "kept its values"), "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    io_remove_tree(folder);
}

/* --dtype applies to .npy values wherever they are, and is refused where there are none. */
TEST(dtype_applies_to_npy_values_only)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *tensors = io_path(0, folder, "w.safetensors");
    cli_result r;
    CHECK(CLI(&r, "convert", SAMPLE, "-o", tensors));
    CHECK(r.status == 0);
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", tensors, "--dtype", "float64", "-o", io_path(1, folder, "w.npz")));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "--dtype float64", "converts .npy values", "a safetensors file"));
    cli_result_free(&r);
    io_remove_tree(folder);
}

/* A net given as weights names its repeated layers as the base does: the k-th layer of a name
 * takes the k-th's blobs (1.1 and 1.2's first cut gave every one of them the first's, a shape
 * mismatch). */
TEST(a_net_with_repeated_names_is_weights_for_its_twin)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *net = io_path(0, folder, "base.caffemodel"), *back = io_path(1, folder, "back.caffemodel");
    CHECK(cli_make_net("--names hostile --layers 400 --seed 21 --max-values 6 --diffs", net));
    cli_result r;
    CHECK(CLI(&r, "convert", net, "--like", net, "-o", back));
    CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    size_t size = 0;
    uint8_t *bytes = ft_read_file(net, &size);
    CHECK(bytes != NULL && io_file_holds(back, bytes, size));
    free(bytes);
    io_remove_tree(folder);
}

/* --to prototxt: the definition of a net, told from the output's name too; a prototxt is replaced
 * without --force (cblob wrote it), a binary file only with it; what is not a net is refused. */
TEST(a_net_definition_to_prototxt)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *text = io_path(0, folder, "lenet.prototxt"), *model = io_path(1, folder, "model.prototxt");
    cli_result r;
    CHECK(CLI(&r, "convert", LENET, "-o", text));
    CHECK_MSG(r.status == 0 && strstr(r.out, "without its weights") != NULL, "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    size_t size = 0;
    uint8_t *bytes = ft_read_file(text, &size);
    CHECK(bytes != NULL && size > 0 && size < 4096); /* 1.7 MB of weights left out */
    CHECK(bytes != NULL && memcmp(bytes, "name: \"LeNet\"\nlayer {\n  name: \"mnist\"\n", 38) == 0);
    CHECK(bytes != NULL && strstr((const char *)bytes, "    kernel_size: 5\n") != NULL);
    free(bytes);
    /* Again over itself: a prototxt needs no --force. */
    CHECK(CLI(&r, "convert", "--quiet", SAMPLE, "--to", "prototxt", "-o", text));
    CHECK_MSG(r.status == 0 && r.out[0] == '\0', "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    uint8_t *original = NULL;
    CHECK(copy_of(SAMPLE, model, &original, &size));
    CHECK(CLI(&r, "convert", LENET, "--to", "prototxt", "-o", model));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "holds a Caffe net (.caffemodel)", "--force"));
    cli_result_free(&r);
    CHECK(io_file_holds(model, original, size));
    free(original);
    CHECK(CLI(&r, "convert", LENET, "--to", "prototxt", "--dtype", "float64", "-o", io_path(2, folder, "x.prototxt")));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "--dtype float64", "holds no values"));
    cli_result_free(&r);
    CHECK_EQ_INT(io_count_entries(folder), 2);
    io_remove_tree(folder);
}

/* A file's bytes as a C string (malloc'd; NULL when it cannot be read). */
static char *file_text(const char *path)
{
    size_t size = 0;
    uint8_t *bytes = ft_read_file(path, &size);
    char *text = bytes != NULL ? realloc(bytes, size + 1) : NULL;
    if (text != NULL)
        text[size] = '\0';
    else
        free(bytes);
    return text;
}

/* text with the first `from` replaced by `to`, written to path. */
static bool write_replaced(const char *path, const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (at == NULL)
        return false;
    char *out = malloc(strlen(text) + strlen(to) + 1);
    if (out == NULL)
        return false;
    sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    const bool written = io_write_file(path, out, strlen(out));
    free(out);
    return written;
}

/* --to caffemodel --weights W: the definition IN with W's weights attached by layer name (Caffe's
 * CopyTrainedLayersFrom); the layers left out said as Caffe logs them; Caffe's errors; misuse. */
TEST(weights_attached_to_a_definition)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *deploy = io_path(0, folder, "lenet.prototxt"), *same = io_path(1, folder, "same.caffemodel");
    const char *renamed = io_path(2, folder, "renamed.prototxt"), *out = io_path(3, folder, "out.caffemodel");
    const char *a = io_path(4, folder, "a.npz"), *b = io_path(5, folder, "b.npz");
    cli_result r;
    CHECK(CLI(&r, "convert", "--quiet", LENET, "-o", deploy));
    CHECK(r.status == 0);
    cli_result_free(&r);
    /* Its own definition: the model again (its weights bit for bit: the same .npz), nothing said. */
    CHECK(CLI(&r, "convert", deploy, "--weights", LENET, "-o", same));
    CHECK_MSG(r.status == 0 && strstr(r.out, "with the weights of") != NULL && r.err[0] == '\0', "exit %d: %s%s",
              r.status, r.out, r.err);
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", "--quiet", same, "-o", a));
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", "--quiet", LENET, "-o", b));
    cli_result_free(&r);
    size_t na = 0, nb = 0;
    uint8_t *x = ft_read_file(a, &na), *y = ft_read_file(b, &nb);
    CHECK(x != NULL && y != NULL && na == nb && memcmp(x, y, na) == 0);
    free(x);
    free(y);
    char *text = file_text(deploy);
    CHECK(text != NULL);
    CHECK(CLI(&r, "convert", same, "--to", "prototxt", "-o", "-"));
    CHECK(r.status == 0 && strcmp(r.out, text) == 0);
    cli_result_free(&r);

    /* ip2 renamed: its weights are ignored, the new layer gets none; both said on standard error. */
    CHECK(write_replaced(renamed, text, "name: \"ip2\"", "name: \"ip2_new\""));
    CHECK(CLI(&r, "convert", renamed, "--weights", LENET, "--to", "caffemodel", "-o", out));
    CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
    CHECK_MSG(strstr(r.err, "ignoring source layer ip2 of") != NULL && strstr(r.err, "(2 blobs)") != NULL &&
              strstr(r.err, "layer ip2_new of") != NULL && strstr(r.err, "gets no weights") != NULL, "%s", r.err);
    cli_result_free(&r);
    CHECK(CLI(&r, "inspect", "--shapes", out));
    CHECK(r.status == 0 && strstr(r.out, "ip2_new") != NULL);
    cli_result_free(&r);

    /* Caffe's error for a changed num_output: nothing written. */
    const char *fewer = io_path(6, folder, "fewer.prototxt"), *none = io_path(7, folder, "none.caffemodel");
    CHECK(write_replaced(fewer, text, "num_output: 10\n", "num_output: 5\n"));
    CHECK(CLI(&r, "convert", fewer, "--weights", LENET, "-o", none));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "Cannot copy param 0 weights from layer 'ip2'; shape mismatch",
                                         "nothing was written"));
    cli_result_free(&r);
    CHECK(access(none, F_OK) != 0);
    /* Misuse. */
    CHECK(CLI(&r, "convert", deploy, "--weights", LENET, "-o", io_path(3, folder, "none.npz")));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "--weights", "only --to caffemodel"));
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", deploy, "--weights", LENET, "--like", LENET, "-o", none));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "--weights", "--like", "give one"));
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", deploy, "--weights", MEAN, "-o", none));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "--weights", "not a Caffe net"));
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", deploy, "--weights", LENET, "--allow-missing", "-o", none));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "--allow-missing"));
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", deploy, "--weights", same, "-o", same));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "never writes over an input", "given to --weights"));
    cli_result_free(&r);
    CHECK(access(none, F_OK) != 0);
    free(text);
    io_remove_tree(folder);
}

/* --to prototxt of a BlobProto (a mean file) and back with --to binaryproto: the same blob. */
TEST(a_blob_as_text_and_back)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *text = io_path(0, folder, "mean.prototxt"), *back = io_path(1, folder, "back.binaryproto");
    cli_result r;
    CHECK(CLI(&r, "convert", MEAN, "--to", "prototxt", "-o", text));
    CHECK_MSG(r.status == 0 && strstr(r.out, "the BlobProto of") != NULL, "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    char *written = file_text(text);
    CHECK(written != NULL && strncmp(written, "data: 130.710739\n", 17) == 0);
    CHECK(written != NULL && strstr(written, "\nshape {\n  dim: 1\n  dim: 3\n  dim: 32\n  dim: 32\n}\n") != NULL);
    CHECK(CLI(&r, "convert", text, "-o", back));
    CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", back, "--to", "prototxt", "-o", "-"));
    CHECK(r.status == 0 && written != NULL && strcmp(r.out, written) == 0);
    cli_result_free(&r);
    CHECK(CLI(&r, "inspect", text));
    CHECK_MSG(r.status == 0 && strstr(r.out, "3072") != NULL, "exit %d: %s%s", r.status, r.out, r.err);
    cli_result_free(&r);
    /* A mistake in the text names its line and column; nothing written. */
    const char *bad = io_path(2, folder, "bad.prototxt"), *none = io_path(3, folder, "none.binaryproto");
    static const char mistake[] = "shape {\n  dim: 2\n}\ndata: 1\ndatum: 2\n";
    CHECK(io_write_file(bad, mistake, sizeof mistake - 1));
    CHECK(CLI(&r, "convert", bad, "-o", none));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "bad.prototxt:5:1", "datum"));
    cli_result_free(&r);
    CHECK(access(none, F_OK) != 0);
    free(written);
    io_remove_tree(folder);
}
