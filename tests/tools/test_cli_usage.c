/* SPDX-License-Identifier: BSD-2-Clause */
/* The cblob program as people use it (issue 10, "The command line, as people use it"; issue 11,
 * inspect and convert): versions and help, the mistakes people make and the one line that says
 * what is wrong, names that would drive a terminal, standard input and output, .npy dtypes, the
 * structure in inspect, and the way back into a .caffemodel. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli_support.h"
#include "harness.h"
#include "io_support.h"
#include "support.h"

#define SAMPLE CBLOB_SOURCE_DIR "/samples/tiny_lenet.caffemodel"

static const char *path_in(int slot, const char *folder, const char *name)
{
    return io_path(slot, folder, name);
}

/* ---- versions, help, usage ------------------------------------------------------------------ */

TEST(version_and_help_on_every_command)
{
    cli_result r;
    CHECK(CLI(&r, "--version"));
    CHECK(r.status == 0 && strncmp(r.out, "cblob ", 6) == 0 && strstr(r.out, "ABI") != NULL);
    cli_result_free(&r);
    static const char *const commands[] = {"info", "inspect", "convert"};
    for (size_t i = 0; i < 3; ++i) {
        for (int form = 0; form < 3; ++form) {
            if (form == 2)
                CHECK(CLI(&r, "help", commands[i]));
            else
                CHECK(CLI(&r, commands[i], form == 0 ? "--help" : "-h"));
            CHECK_MSG(r.status == 0 && r.err[0] == '\0', "cblob %s help: exit %d, %s", commands[i], r.status, r.err);
            char usage[64];
            snprintf(usage, sizeof usage, "usage: cblob %s", commands[i]);
            CHECK(strncmp(r.out, usage, strlen(usage)) == 0);
            cli_result_free(&r);
        }
    }
    CHECK(CLI(&r, "help"));
    CHECK(r.status == 0 && strstr(r.out, "--version") != NULL && strstr(r.out, "--like") != NULL);
    cli_result_free(&r);
}

TEST(usage_is_said_once_and_errors_name_the_argument)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *out = path_in(0, folder, "out");
    cli_result r;
    struct {
        const char *args[8];
        const char *parts[4];
    } cases[] = {
        {{"convert", SAMPLE}, {"--to", "missing"}},
        {{"convert", SAMPLE, "--to", "npy"}, {"--to npy", "output folder", "missing"}},
        {{"convert", SAMPLE, "--to", "binaryproto"}, {"--to binaryproto", "output file", "missing"}},
        {{"convert", SAMPLE, "--to"}, {"--to", "missing"}},
        {{"convert", "--to", "npy", out}, {"--to npy", "input is missing"}},
        {{"convert", SAMPLE, "--to", "hdf5", out}, {"hdf5", "unknown format"}},
        {{"convert", SAMPLE, "--frobnicate", "--to", "npy", out}, {"--frobnicate", "unknown option"}},
        {{"convert", SAMPLE, "--to", "caffemodel", out}, {"--like", "missing"}},
        {{"convert", SAMPLE, "--dtype", "float16", "--to", "npz", out}, {"--dtype float16"}},
        {{"convert", SAMPLE, "--names", "keras", "--to", "safetensors", out}, {"--names keras"}},
        {{"convert", SAMPLE, SAMPLE, "--to", "npz", out}, {"one input"}},
        {{"convert", "-", "--like", "-", "--to", "caffemodel", out}, {"standard input", "once"}},
        {{"convert", SAMPLE, "--to", "npy", "-"}, {"--to npy -", "folder"}},
        {{"inspect"}, {"FILE", "missing"}},
        {{"inspect", SAMPLE, SAMPLE}, {"one FILE"}},
        {{"inspect", "--jsn", SAMPLE}, {"--jsn", "unknown option"}},
        {{"info", "--bogus"}, {"--bogus", "unexpected argument"}},
        {{"frobnicate"}, {"frobnicate", "unknown command"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        CHECK(cli_run(&r, NULL, 20, cases[i].args));
        CHECK_MSG(r.status == 2 && r.out[0] == '\0', "case %zu (%s %s): exit %d, stdout %s", i, cases[i].args[0],
                  cases[i].args[1] ? cases[i].args[1] : "", r.status, r.out);
        CHECK_MSG(cli_one_line_with(&r, cases[i].parts), "case %zu", i);
        CHECK_MSG(strstr(r.err, "usage: usage:") == NULL, "case %zu says usage twice", i);
        cli_result_free(&r);
    }
    struct stat info;
    CHECK(stat(out, &info) != 0 && errno == ENOENT);
    /* The output before the format: which word is the output is asked, with the spelling that says it. */
    CHECK(CLI(&r, "convert", SAMPLE, out, "--to", "npy"));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "which is the output", out, "-o"));
    cli_result_free(&r);
    CHECK(stat(out, &info) != 0 && errno == ENOENT);
    /* What people also type: the options after the output, --to=FORMAT, a format in capitals. */
    CHECK(CLI(&r, "convert", SAMPLE, "--to=NPZ", out));
    CHECK_MSG(r.status == 0, "%s", r.err);
    cli_result_free(&r);
    /* Since 1.2 inspect reads what convert wrote: an .npz lists its keys' layers. */
    CHECK(CLI(&r, "inspect", out, "--json"));
    CHECK_MSG(r.status == 0 && strstr(r.out, "\"conv1\"") != NULL, "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    io_remove_tree(folder);
}

/* ---- what a file is ------------------------------------------------------------------------- */

TEST(text_prototxt_and_other_files_say_what_they_are)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    static const struct {
        const char *name, *bytes;
        size_t size;
        const char *says;
    } files[] = {
        {"solver.prototxt", "net: \"train_val.prototxt\"\nbase_lr: 0.01\n", 0,
         ":1:1: message caffe.NetParameter has no field named \"net\": not a net's text (a solver's?)"},
        {"notes.txt", "1, 2, 3\n4, 5, 6\n", 0, "is a text file, not a protobuf file"},
        {"weights.h5", "\x89HDF\r\n\x1a\n\0\0\0\0", 12, "HDF5"},
        {"weights.caffemodel.gz", "\x1f\x8b\x08\0\0\0\0\0", 8, "gunzip"},
        {"garbage.bin", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12, "is not a protobuf file ("},
        {"empty.caffemodel", "", 0, "is empty"},
    };
    cli_result r;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
        const char *path = path_in(0, folder, files[i].name);
        CHECK(io_write_file(path, files[i].bytes, files[i].size ? files[i].size : strlen(files[i].bytes)));
        for (int command = 0; command < 2; ++command) {
            if (command == 0)
                CHECK(CLI(&r, "inspect", path));
            else
                CHECK(CLI(&r, "convert", path, "--to", "npy", path_in(1, folder, "out")));
            CHECK_MSG(r.status == 2, "%s: exit %d", files[i].name, r.status);
            /* What the file is comes first, right after its name; the wire detail after. */
            CHECK(CLI_ERROR_HAS(&r, files[i].says));
            CHECK_MSG(strstr(r.err, path) < strstr(r.err, files[i].says), "%s", r.err);
            cli_result_free(&r);
        }
    }
    io_remove_tree(folder);
}

/* A net's text (since 1.2) is inspected as a net: its layers, without blobs. */
TEST(a_prototxt_is_inspected_as_a_net)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *path = path_in(0, folder, "deploy.prototxt");
    static const char text[] = "# LeNet\nname: \"LeNet\"\nlayer {\n  name: \"data\"\n  type: \"Input\"\n  top: \"data\"\n"
                               "  input_param { shape: { dim: 64 dim: 1 dim: 28 dim: 28 } }\n}\n";
    CHECK(io_write_file(path, text, sizeof text - 1));
    cli_result r;
    CHECK(CLI(&r, "inspect", "--params", path));
    CHECK_MSG(r.status == 0 && strstr(r.out, "name    LeNet") != NULL && strstr(r.out, "data   Input") != NULL &&
                  strstr(r.out, "{\"input_param\":{\"shape\":[{\"dim\":[64,1,28,28]}]}}") != NULL,
              "exit %d: %s%s", r.status, r.out, r.err);
    cli_result_free(&r);
    CHECK(io_write_file(path, "layer {\n  name: \"data\"\n  bottom: 3\n}\n", 37));
    CHECK(CLI(&r, "inspect", path));
    CHECK_MSG(r.status == 2 && CLI_ERROR_HAS(&r, "deploy.prototxt:3:11: bottom takes"), "%s", r.err);
    cli_result_free(&r);
    io_remove_tree(folder);
}

/* ---- names that would drive a terminal ------------------------------------------------------ */

TEST(names_are_escaped_in_the_table)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    static const char *const names[] = {"\x1b[31mred\x1b[0m", "tab\tand\nnewline", "\xff\xfe", "bidi\xe2\x80\xae",
                                        "c1\xc2\x9b\x32J" /* \x32: the digit 2 */, "back\\slash", "plain"};
    const char *net = path_in(0, folder, "escapes.caffemodel");
    CHECK(cli_write_named_net(net, names, 7));
    cli_result r;
    for (int json = 0; json < 2; ++json) {
        CHECK(json ? CLI(&r, "inspect", "--json", net) : CLI(&r, "inspect", "--params", net));
        CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
        for (size_t i = 0; i < r.out_size; ++i)
            CHECK_MSG(r.out[i] == '\n' || (r.out[i] >= 0x20 && r.out[i] < 0x7f), "byte %02x at %zu reaches the terminal",
                      (unsigned char)r.out[i], i);
        if (!json) {
            CHECK(strstr(r.out, "\\x1b[31mred\\x1b[0m") != NULL && strstr(r.out, "tab\\tand\\nnewline") != NULL);
            CHECK(strstr(r.out, "\\xff\\xfe") != NULL && strstr(r.out, "bidi\\u202e") != NULL);
            CHECK(strstr(r.out, "c1\\u009b2J") != NULL && strstr(r.out, "back\\\\slash") != NULL);
        }
        cli_result_free(&r);
    }
    io_remove_tree(folder);
}

/* ---- structure -------------------------------------------------------------------------------- */

TEST(inspect_shows_bottoms_tops_and_params)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *net = path_in(0, folder, "structure.caffemodel");
    CHECK(cli_make_net("--structure --layers 30 --seed 7", net));
    cli_result r, params;
    CHECK(CLI(&r, "inspect", "--json", net));
    CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
    json_error_t error;
    json_t *doc = json_loads(r.out, 0, &error);
    CHECK_MSG(doc != NULL, "not JSON: %s", error.text);
    CHECK(json_integer_value(json_object_get(doc, "schema")) == 2);
    CHECK(CLI(&params, "inspect", "--params", net));
    CHECK(params.status == 0 && strstr(params.out, "bottoms -> tops") != NULL);
    size_t with_params = 0;
    json_t *layers = json_object_get(doc, "layers");
    CHECK(json_array_size(layers) == 30);
    for (size_t i = 0; i < json_array_size(layers); ++i) {
        json_t *layer = json_array_get(layers, i);
        /* The table's row says "b1, b2 -> t1" as the JSON lists them. */
        char io[512] = "";
        json_t *bottoms = json_object_get(layer, "bottoms"), *tops = json_object_get(layer, "tops");
        for (size_t b = 0; b < json_array_size(bottoms); ++b)
            snprintf(io + strlen(io), sizeof io - strlen(io), "%s%s", b ? ", " : "",
                     json_string_value(json_array_get(bottoms, b)));
        snprintf(io + strlen(io), sizeof io - strlen(io), "%s", json_array_size(bottoms) ? " -> " : "-> ");
        for (size_t t = 0; t < json_array_size(tops); ++t)
            snprintf(io + strlen(io), sizeof io - strlen(io), "%s%s", t ? ", " : "",
                     json_string_value(json_array_get(tops, t)));
        CHECK_MSG(strstr(params.out, io) != NULL, "the table lacks \"%s\"", io);
        with_params += json_object_size(json_object_get(layer, "params")) > 0;
    }
    CHECK(with_params > 0);
    char *counted = params.out;
    size_t lines = 0;
    while ((counted = strstr(counted, "  params {")) != NULL && ++lines)
        ++counted;
    CHECK_EQ_INT((int)lines, (int)with_params);
    json_decref(doc);
    cli_result_free(&r);
    cli_result_free(&params);
    io_remove_tree(folder);
}

TEST(inspect_json_of_a_5000_layer_net)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *net = path_in(0, folder, "big.caffemodel");
    CHECK(cli_make_net("--all --layers 5000 --seed 9 --max-values 8", net));
    cli_result r;
    CHECK(CLI(&r, "inspect", "--json", net));
    CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
    json_t *doc = json_loads(r.out, 0, NULL);
    CHECK(doc != NULL && json_array_size(json_object_get(doc, "layers")) == 5000);
    json_decref(doc);
    cli_result_free(&r);
    CHECK(CLI(&r, "inspect", net));
    CHECK(r.status == 0 && strstr(r.out, "layers  5000 (") != NULL);
    cli_result_free(&r);
    io_remove_tree(folder);
}

/* --shapes lists what the full inspect lists, without statistics, and reads no value: a model
 * with a 192 MiB blob is listed in a few MiB, where the full inspect holds the blob. */
TEST(inspect_shapes_reads_the_structure_only)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *net = path_in(0, folder, "huge.caffemodel");
    const long huge_kib = 192 * 1024;
    char options[128];
    snprintf(options, sizeof options, "--structure --layers 40 --seed 3 --huge %ld", huge_kib * 1024);
    CHECK(cli_make_net(options, net));
    cli_result full, shapes, table;
    CHECK(CLI(&full, "inspect", "--json", net));
    CHECK(CLI(&shapes, "inspect", "--json", "--shapes", net));
    CHECK(CLI(&table, "inspect", "--shapes", net));
    CHECK_MSG(full.status == 0 && shapes.status == 0 && table.status == 0, "%s%s%s", full.err, shapes.err, table.err);
    CHECK_MSG(full.peak_kib > huge_kib, "the full inspect peaked at %ld KiB", full.peak_kib);
    CHECK_MSG(shapes.peak_kib < huge_kib / 4 && table.peak_kib < huge_kib / 4,
              "--shapes peaked at %ld KiB (JSON) and %ld KiB (table) for a %ld KiB blob", shapes.peak_kib,
              table.peak_kib, huge_kib);
    CHECK(strstr(table.out, "bottoms -> tops") != NULL && strstr(table.out, "  min  ") == NULL);
    /* The same document once the statistics are taken out of the full one. */
    json_t *with_stats = json_loads(full.out, 0, NULL), *without = json_loads(shapes.out, 0, NULL);
    CHECK(with_stats != NULL && without != NULL);
    json_t *layers = json_object_get(with_stats, "layers");
    CHECK(json_array_size(layers) == 41);
    const char *const stats[] = {"sum", "asum", "sumsq", "min", "max"};
    for (size_t i = 0; i < json_array_size(layers); ++i) {
        json_t *blobs = json_object_get(json_array_get(layers, i), "blobs");
        for (size_t j = 0; j < json_array_size(blobs); ++j)
            for (size_t k = 0; k < 5; ++k)
                CHECK(json_object_del(json_array_get(blobs, j), stats[k]) == 0);
    }
    CHECK(json_equal(with_stats, without));
    /* What the lazy open reads as a net without layers is still named for what it is. */
    const char *empty = path_in(1, folder, "empty.caffemodel");
    FILE *f = fopen(empty, "wb");
    CHECK(f != NULL && fclose(f) == 0);
    cli_result refused;
    CHECK(CLI(&refused, "inspect", "--shapes", empty));
    CHECK_MSG(refused.status == 2 && CLI_ERROR_HAS(&refused, "is empty"), "exit %d: %s", refused.status, refused.err);
    cli_result_free(&refused);
    json_decref(with_stats);
    json_decref(without);
    cli_result_free(&full);
    cli_result_free(&shapes);
    cli_result_free(&table);
    io_remove_tree(folder);
}

/* ---- standard input and output -------------------------------------------------------------- */

TEST(dash_reads_standard_input_and_writes_standard_output)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    cli_result r, from_path;
    CHECK(cli_run(&r, SAMPLE, 20, (const char *const[]){"inspect", "--json", "-", NULL}));
    CHECK(CLI(&from_path, "inspect", "--json", SAMPLE));
    CHECK(r.status == 0 && from_path.status == 0);
    CHECK(strstr(r.out, "\"file\": \"standard input\"") != NULL);
    /* The same document but for the file's name. */
    CHECK(strcmp(strstr(r.out, "\"kind\""), strstr(from_path.out, "\"kind\"")) == 0);
    cli_result_free(&r);
    cli_result_free(&from_path);
    /* A .caffemodel to standard output is what the file is (the sample is lossless). */
    CHECK(CLI(&r, "convert", SAMPLE, "--like", SAMPLE, "--to", "caffemodel", "-"));
    CHECK(r.status == 0);
    CHECK(io_file_holds(SAMPLE, r.out, r.out_size));
    cli_result_free(&r);
    /* npz through standard output and back in through standard input. */
    CHECK(CLI(&r, "convert", SAMPLE, "--to", "npz", "-"));
    CHECK(r.status == 0 && r.out_size > 22 && memcmp(r.out, "PK", 2) == 0);
    const char *npz = path_in(0, folder, "sample.npz");
    CHECK(io_write_file(npz, r.out, r.out_size));
    cli_result_free(&r);
    CHECK(cli_run(&r, npz, 20, (const char *const[]){"convert", "-", "--like", SAMPLE, "--to", "caffemodel", "-", NULL}));
    CHECK(r.status == 0 && io_file_holds(SAMPLE, r.out, r.out_size));
    cli_result_free(&r);
    /* A .npy from standard input to a BlobProto on standard output, and back to a folder. */
    const float values[3] = {1.5f, -2.0f, 0.25f};
    const char *npy = path_in(1, folder, "v.npy"), *proto = path_in(2, folder, "v.binaryproto");
    CHECK(cli_write_npy(npy, "<f4", "(3,)", values, sizeof values));
    CHECK(cli_run(&r, npy, 20, (const char *const[]){"convert", "-", "--to", "binaryproto", "-", NULL}));
    CHECK(r.status == 0);
    CHECK(io_write_file(proto, r.out, r.out_size));
    cli_result_free(&r);
    CHECK(cli_run(&r, proto, 20, (const char *const[]){"convert", "-", "--to", "npy", path_in(3, folder, "v"), NULL}));
    CHECK_MSG(r.status == 0, "%s", r.err);
    cli_result_free(&r);
    size_t size = 0;
    uint8_t *back = ft_read_file(path_in(4, path_in(3, folder, "v"), "blob_0.npy"), &size);
    CHECK(back != NULL && size == 128 + sizeof values && memcmp(back + 128, values, sizeof values) == 0);
    free(back);
    io_remove_tree(folder);
}

/* ---- .npy dtypes ---------------------------------------------------------------------------- */

TEST(npy_dtypes_convert_with_dtype_or_say_how)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const int64_t labels[4] = {0, 1, 7, -3};
    const uint16_t halves[3] = {0x3c00, 0xc000, 0x3400}; /* 1, -2, 0.25 */
    const uint8_t flags[3] = {1, 0, 1};
    const int64_t too_big[2] = {1, 16777217}; /* 2^24 + 1 has no float32 */
    const double fraction[2] = {1.0, 2.5};
    struct {
        const char *name, *descr, *shape, *dtype;
        const void *values;
        size_t size;
        int status;
        const char *says; /* the message, or NULL and the converted values' sum */
        double sum;
    } cases[] = {
        {"labels.npy", "<i8", "(4,)", NULL, labels, sizeof labels, 2, "int64 values (NumPy's default integer type)", 0},
        {"labels.npy", "<i8", "(4,)", "float32", labels, sizeof labels, 0, NULL, 5},
        {"labels.npy", "<i8", "(4,)", "int32", labels, sizeof labels, 0, NULL, 5},
        {"labels.npy", "<i8", "(4,)", "uint32", labels, sizeof labels, 2, "-3 at index 3 does not fit uint32", 0},
        {"half.npy", "<f2", "(3,)", NULL, halves, sizeof halves, 2, "astype", 0},
        {"half.npy", "<f2", "(3,)", "float32", halves, sizeof halves, 0, NULL, -0.75},
        {"flags.npy", "|b1", "(3,)", "float32", flags, sizeof flags, 0, NULL, 2},
        {"bytes.npy", "|u1", "(3,)", NULL, flags, sizeof flags, 2, "--dtype float32", 0},
        {"bytes.npy", "|u1", "(3,)", "int32", flags, sizeof flags, 0, NULL, 2},
        {"big.npy", "<i8", "(2,)", "float32", too_big, sizeof too_big, 2, "16777217 at index 1 does not fit float32", 0},
        {"big.npy", "<i8", "(2,)", "float64", too_big, sizeof too_big, 0, NULL, 16777218},
        {"frac.npy", "<f8", "(2,)", "int32", fraction, sizeof fraction, 2, "2.5 at index 1 does not fit int32", 0},
        {"be.npy", ">f4", "(1,)", NULL, fraction, 4, 2, "big-endian", 0},
        {"complex.npy", "<c8", "(1,)", NULL, fraction, 8, 2, "'<c8'", 0},
    };
    cli_result r;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const char *npy = path_in(0, folder, cases[i].name), *out = path_in(1, folder, "out.binaryproto");
        CHECK(cli_write_npy(npy, cases[i].descr, cases[i].shape, cases[i].values, cases[i].size));
        unlink(out);
        if (cases[i].dtype != NULL)
            CHECK(CLI(&r, "convert", npy, "--dtype", cases[i].dtype, "--to", "binaryproto", out));
        else
            CHECK(CLI(&r, "convert", npy, "--to", "binaryproto", out));
        CHECK_MSG(r.status == cases[i].status, "case %zu: exit %d: %s", i, r.status, r.err);
        if (cases[i].says != NULL)
            CHECK_MSG(CLI_ERROR_HAS(&r, npy, cases[i].says), "case %zu", i);
        cli_result_free(&r);
        if (cases[i].status != 0)
            continue;
        /* The values, converted, are the blob's (a BlobProto holds float32 values, or float64 ones that
         * integers are written as). */
        CHECK(CLI(&r, "inspect", "--json", out));
        json_t *doc = json_loads(r.out, 0, NULL);
        cli_result_free(&r);
        json_t *blob = json_array_get(json_object_get(doc, "blobs"), 0);
        const char *dtype = json_string_value(json_object_get(blob, "dtype"));
        const double sum = json_number_value(json_object_get(blob, "sum"));
        const char *stored = strcmp(cases[i].dtype, "float32") == 0 ? "float32" : "float64";
        const bool same = dtype != NULL && strcmp(dtype, stored) == 0 && sum == cases[i].sum;
        json_decref(doc);
        CHECK_MSG(same, "case %zu: sum %g", i, sum);
    }
    io_remove_tree(folder);
}

/* ---- the way back ---------------------------------------------------------------------------- */

TEST(way_back_keeps_the_base_byte_for_byte)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    static const char *const formats[] = {"v2", "v1", "v0"};
    for (int f = 0; f < 3; ++f) {
        char options[128];
        snprintf(options, sizeof options, "--format %s --all --layers 60 --seed %d", formats[f], 11 + f);
        const char *net = path_in(0, folder, "base.caffemodel"), *back = path_in(1, folder, "back.caffemodel");
        CHECK(cli_make_net(options, net));
        static const char *const ways[][2] = {{"npy", "w_npy"}, {"npz", "w.npz"}, {"safetensors", "w.safetensors"}};
        for (int w = 0; w < 3; ++w) {
            const char *weights = path_in(2, folder, ways[w][1]);
            cli_result r;
            CHECK(CLI(&r, "convert", net, "--to", ways[w][0], weights));
            CHECK_MSG(r.status == 0, "%s: %s", ways[w][0], r.err);
            cli_result_free(&r);
            CHECK(CLI(&r, "convert", weights, "--like", net, "--to", "caffemodel", back));
            /* safetensors keys are JSON text: a name that is not UTF-8 cannot come back by it. */
            if (r.status != 0 && w == 2 && strstr(r.err, "\xef\xbf\xbd") != NULL) {
                cli_result_free(&r);
                continue;
            }
            CHECK_MSG(r.status == 0, "%s %s: %s", formats[f], ways[w][0], r.err);
            cli_result_free(&r);
            size_t size = 0;
            uint8_t *bytes = ft_read_file(net, &size);
            CHECK_MSG(io_file_holds(back, bytes, size), "%s through %s is not the base byte for byte", formats[f],
                      ways[w][0]);
            free(bytes);
        }
    }
    io_remove_tree(folder);
}

TEST(way_back_lists_every_mismatch_and_writes_nothing)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *npy = path_in(0, folder, "npy"), *out = path_in(1, folder, "out.caffemodel");
    cli_result r;
    CHECK(CLI(&r, "convert", SAMPLE, "--to", "npy", npy));
    CHECK(r.status == 0);
    cli_result_free(&r);
    /* Two blobs of the wrong shape: files that are not what index.json lists are refused. */
    const float values[6] = {0};
    CHECK(cli_write_npy(path_in(2, npy, "conv1_0.npy"), "<f4", "(2, 3)", values, sizeof values));
    CHECK(cli_write_npy(path_in(3, npy, "ip2_1.npy"), "<f4", "(6,)", values, sizeof values));
    CHECK(CLI(&r, "convert", npy, "--like", SAMPLE, "--to", "caffemodel", out));
    CHECK_MSG(r.status == 2, "exit %d: %s", r.status, r.err);
    CHECK(CLI_ERROR_HAS(&r, "conv1_0.npy", "does not hold what index.json lists"));
    cli_result_free(&r);
    /* Read by their names (no index.json, --npy-names), every mismatch is listed, and a layer the
     * base lacks. */
    CHECK(unlink(path_in(4, npy, "index.json")) == 0);
    CHECK(cli_write_npy(path_in(5, npy, "nosuch_0.npy"), "<f4", "(6,)", values, sizeof values));
    CHECK(CLI(&r, "convert", npy, "--like", SAMPLE, "--to", "caffemodel", out));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "has no index.json", "--npy-names"));
    cli_result_free(&r);
    CHECK(CLI(&r, "convert", npy, "--npy-names", "--like", SAMPLE, "--to", "caffemodel", out));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "3 mismatches", "conv1 blob 0", "ip2 blob 1",
                                         "\"nosuch\" is not in the model", "nothing was written"));
    cli_result_free(&r);
    struct stat info;
    CHECK(stat(out, &info) != 0 && errno == ENOENT);
    CHECK_EQ_INT(io_count_temporaries(folder), 0);
    io_remove_tree(folder);
}

TEST(way_back_of_a_5000_layer_net_with_repeated_names)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *net = path_in(0, folder, "base.caffemodel"), *back = path_in(1, folder, "back.caffemodel");
    CHECK(cli_make_net("--names hostile --layers 5000 --seed 21 --max-values 6 --diffs", net));
    static const char *const ways[][2] = {{"npy", "w_npy"}, {"npz", "w.npz"}};
    for (int w = 0; w < 2; ++w) {
        const char *weights = path_in(2, folder, ways[w][1]);
        cli_result r;
        CHECK(CLI(&r, "convert", net, "--to", ways[w][0], weights));
        CHECK_MSG(r.status == 0, "%s: %s", ways[w][0], r.err);
        cli_result_free(&r);
        CHECK(CLI(&r, "convert", weights, "--like", net, "--to", "caffemodel", back));
        CHECK_MSG(r.status == 0, "%s: %s", ways[w][0], r.err);
        cli_result_free(&r);
        size_t size = 0;
        uint8_t *bytes = ft_read_file(net, &size);
        CHECK_MSG(io_file_holds(back, bytes, size), "through %s the base changed", ways[w][0]);
        free(bytes);
    }
    io_remove_tree(folder);
}

/* --summary: each layer's parameters and bytes and the total, the figures of lenet's independent
 * decoding (lenet_iter_10000.layers.txt: 431080 values in 4 layers with blobs, float32); no value
 * is read. */
TEST(summary_counts_parameters_per_layer_and_in_total)
{
    cli_result r;
    CHECK(CLI(&r, "inspect", "--summary", CBLOB_CAFFE_DATA_DIR "/lenet_iter_10000.caffemodel"));
    CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
    CHECK_MSG(strstr(r.out, "  layer  type             parameters    bytes\n") != NULL &&
                  strstr(r.out, "  conv1  Convolution             520     2080\n") != NULL &&
                  strstr(r.out, "  ip1    InnerProduct         400500  1602000\n") != NULL &&
                  strstr(r.out, "  relu1  ReLU                      0        0\n") != NULL &&
                  strstr(r.out, "\ntotal   431080 parameters in 4 of 9 layers, 1724320 bytes (1.6 MiB)\n") != NULL,
              "%s", r.out);
    cli_result_free(&r);
    CHECK(CLI(&r, "inspect", "--summary", "--json", CBLOB_CAFFE_DATA_DIR "/lenet_iter_10000.caffemodel"));
    CHECK(r.status == 2 && CLI_ERROR_HAS(&r, "--summary prints a table of its own: without --json"));
    cli_result_free(&r);
}
