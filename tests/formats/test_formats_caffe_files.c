/* SPDX-License-Identifier: BSD-2-Clause */
/* The real Caffe files in ../shared/data/caffe/, read through the public API and compared with
 * the independent decodings beside them (.layers.txt for models, .blob.txt for BlobProtos):
 * names, types, shapes and counts exactly, first/sum/min/max within float tolerance. */
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <unistd.h>

#include "harness.h"
#include "support.h"

#define MAX_LAYERS 256
#define MAX_BLOBS 8

typedef struct expected_blob {
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    int64_t count;
    bool has_stats;
    double first, sum, min, max;
} expected_blob;

typedef struct expected_layer {
    char name[128], type[128];
    int num_blobs;
    expected_blob blobs[MAX_BLOBS];
} expected_layer;

typedef struct expected_net {
    char name[128];
    char format[8];
    int num_layers;
    expected_layer layers[MAX_LAYERS];
} expected_net;

static void skip_unless_data(void)
{
    DIR *dir = opendir(CBLOB_CAFFE_DATA_DIR);
    if (dir == NULL)
        SKIP("the Caffe files folder " CBLOB_CAFFE_DATA_DIR " is absent");
    closedir(dir);
}

static char *trim(char *text)
{
    while (*text == ' ')
        ++text;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\n' || text[n - 1] == '\r'))
        text[--n] = '\0';
    return text;
}

/* "[20,1,5,5]" */
static bool parse_dims(const char *text, expected_blob *blob)
{
    if (*text != '[')
        return false;
    ++text;
    blob->num_axes = 0;
    while (*text != ']') {
        char *end;
        blob->dims[blob->num_axes++] = strtoll(text, &end, 10);
        if (end == text || blob->num_axes > CBLOB_MAX_AXES)
            return false;
        text = *end == ',' ? end + 1 : end;
    }
    return true;
}

/* "first=0.048 sum=1.53 min=-0.45 max=0.61" anywhere in line */
static bool parse_stats(const char *line, expected_blob *blob)
{
    const char *first = strstr(line, "first="), *sum = strstr(line, "sum="), *min = strstr(line, "min="),
               *max = strstr(line, "max=");
    if (first == NULL || sum == NULL || min == NULL || max == NULL)
        return false;
    blob->first = strtod(first + 6, NULL);
    blob->sum = strtod(sum + 4, NULL);
    blob->min = strtod(min + 4, NULL);
    blob->max = strtod(max + 4, NULL);
    blob->has_stats = true;
    return true;
}

/* A table row's blobs: "-" or "shape=[20,1,5,5] (500 data(float32)); shape=[20] (20 data(float32))". */
static bool parse_row_blobs(char *text, expected_layer *layer)
{
    layer->num_blobs = 0;
    if (strcmp(trim(text), "-") == 0)
        return true;
    for (char *part = strtok(text, ";"); part != NULL; part = strtok(NULL, ";")) {
        part = trim(part);
        expected_blob *blob = &layer->blobs[layer->num_blobs++];
        const char *dims = strchr(part, '[');
        const char *count = strchr(part, '(');
        if (layer->num_blobs > MAX_BLOBS || dims == NULL || count == NULL || !parse_dims(dims, blob))
            return false;
        blob->count = strtoll(count + 1, NULL, 10);
    }
    return true;
}

static bool parse_layers_file(const char *path, expected_net *net)
{
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return false;
    memset(net, 0, sizeof *net);
    char line[4096];
    bool ok = true;
    while (ok && fgets(line, sizeof line, file) != NULL) {
        char *quote;
        if (strncmp(line, "net name: '", 11) == 0 && (quote = strrchr(line, '\'')) > line + 10) {
            *quote = '\0';
            snprintf(net->name, sizeof net->name, "%.127s", line + 11);
        } else if (strncmp(line, "format: ", 8) == 0) {
            snprintf(net->format, sizeof net->format, "%.2s", line + 8);
        } else if (line[0] >= '0' && line[0] <= '9' && strchr(line, '|') != NULL) {
            /* idx | name | type | bottoms -> tops | blobs */
            char *fields[5];
            int n = 0;
            for (char *p = line, *bar; n < 5; p = bar + 1) {
                bar = n < 4 ? strchr(p, '|') : p + strlen(p);
                if (bar == NULL)
                    break;
                *bar = '\0';
                fields[n++] = p;
            }
            const int index = atoi(fields[0]);
            ok = n == 5 && index == net->num_layers && index < MAX_LAYERS;
            if (ok) {
                expected_layer *layer = &net->layers[net->num_layers++];
                snprintf(layer->name, sizeof layer->name, "%.127s", trim(fields[1]));
                snprintf(layer->type, sizeof layer->type, "%.127s", trim(fields[2]));
                ok = parse_row_blobs(fields[4], layer);
            }
        } else if (strstr(line, ".blobs[") != NULL && strstr(line, "first=") != NULL) {
            /* "conv1.blobs[0]: n=500 first=... sum=... min=... max=..." */
            char *bracket = strstr(line, ".blobs[");
            const int index = atoi(bracket + 7);
            *bracket = '\0';
            ok = false;
            for (int i = 0; i < net->num_layers; ++i)
                if (strcmp(net->layers[i].name, line) == 0 && index < net->layers[i].num_blobs)
                    ok = parse_stats(bracket + 1, &net->layers[i].blobs[index]);
        }
    }
    fclose(file);
    return ok && net->num_layers > 0;
}

static bool parse_blob_file(const char *path, expected_blob *blob)
{
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return false;
    memset(blob, 0, sizeof *blob);
    char line[4096];
    bool shape = false, values = false;
    while (fgets(line, sizeof line, file) != NULL) {
        const char *dims = strchr(line, '[');
        if (strncmp(line, "shape:", 6) == 0 && dims != NULL)
            shape = parse_dims(dims, blob);
        else if (strncmp(line, "values:", 7) == 0)
            values = (blob->count = strtoll(line + 7, NULL, 10)) >= 0;
        else if (strncmp(line, "stats:", 6) == 0)
            parse_stats(line, blob);
    }
    fclose(file);
    return shape && values && blob->has_stats;
}

/* The printed statistics carry about 9 significant digits. */
static bool close_to(double got, double expected)
{
    return fabs(got - expected) <= 1e-7 * fabs(expected) + 1e-12;
}

static bool stats_match(cblob_blob *blob, const expected_blob *expected, char *why, size_t why_size)
{
    int64_t count = 0;
    const float *values = NULL;
    cblob_dtype dtype;
    if (!ft_shape_is(blob, expected->num_axes, expected->dims) || cblob_blob_count(blob, &count) != CBLOB_OK ||
        count != expected->count || cblob_blob_dtype(blob, &dtype) != CBLOB_OK || dtype != CBLOB_DTYPE_FLOAT32) {
        snprintf(why, why_size, "shape, count or dtype differs (count %" PRId64 ", expected %" PRId64 ")", count,
                 expected->count);
        return false;
    }
    if (!expected->has_stats || count == 0)
        return true;
    if (cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&values) != CBLOB_OK)
        return false;
    double sum = 0, low = INFINITY, high = -INFINITY;
    for (int64_t i = 0; i < count; ++i) {
        sum += values[i];
        low = fmin(low, values[i]);
        high = fmax(high, values[i]);
    }
    snprintf(why, why_size, "first %.9g/%.9g sum %.12g/%.12g min %.9g/%.9g max %.9g/%.9g", values[0],
             expected->first, sum, expected->sum, low, expected->min, high, expected->max);
    return close_to(values[0], expected->first) && close_to(sum, expected->sum) && close_to(low, expected->min) &&
           close_to(high, expected->max);
}

/* Calls check(model path, expected path) for every file of the extension that has a decoding. */
static int for_each_file(const char *extension, const char *decoding, bool (*check)(const char *, const char *))
{
    DIR *dir = opendir(CBLOB_CAFFE_DATA_DIR);
    int checked = 0;
    struct dirent *entry;
    while (dir != NULL && (entry = readdir(dir)) != NULL) {
        const size_t n = strlen(entry->d_name), e = strlen(extension);
        if (n <= e || strcmp(entry->d_name + n - e, extension) != 0)
            continue;
        char path[4096], expected[4096];
        snprintf(path, sizeof path, "%s/%s", CBLOB_CAFFE_DATA_DIR, entry->d_name);
        snprintf(expected, sizeof expected, "%s/%.*s%s", CBLOB_CAFFE_DATA_DIR, (int)(n - e), entry->d_name, decoding);
        if (access(expected, R_OK) != 0)
            continue;
        if (!check(path, expected)) {
            checked = -1;
            break;
        }
        ++checked;
    }
    if (dir != NULL)
        closedir(dir);
    return checked;
}

static bool check_model_file(const char *path, const char *expected_path)
{
    static expected_net expected;
    if (!parse_layers_file(expected_path, &expected)) {
        fprintf(stderr, "%s: cannot parse\n", expected_path);
        return false;
    }
    cblob_context *ctx = NULL;
    cblob_model *model = NULL;
    bool ok = cblob_context_create(&ctx) == CBLOB_OK && cblob_model_open_file(ctx, path, &model) == CBLOB_OK;
    if (!ok)
        fprintf(stderr, "%s: %s\n", path, cblob_last_error_message());
    const char *name = NULL;
    int64_t layers = 0;
    cblob_net_format format = 0;
    ok = ok && cblob_model_name(model, &name) == CBLOB_OK && cblob_model_num_layers(model, &layers) == CBLOB_OK &&
         cblob_model_format(model, &format) == CBLOB_OK && name != NULL && strcmp(name, expected.name) == 0 &&
         layers == expected.num_layers &&
         strcmp(format == CBLOB_NET_FORMAT_V1 ? "V1" : "V2", expected.format) == 0;
    for (int64_t i = 0; ok && i < layers; ++i) {
        const expected_layer *want = &expected.layers[i];
        const char *layer_name = NULL, *type = NULL;
        int64_t num_blobs = -1;
        ok = cblob_model_layer_name(model, i, &layer_name) == CBLOB_OK &&
             cblob_model_layer_type(model, i, &type) == CBLOB_OK &&
             cblob_model_layer_num_blobs(model, i, &num_blobs) == CBLOB_OK && strcmp(layer_name, want->name) == 0 &&
             strcmp(type, want->type) == 0 && num_blobs == want->num_blobs;
        if (!ok)
            fprintf(stderr, "%s: layer %" PRId64 " is %s/%s/%" PRId64 ", expected %s/%s/%d\n", path, i, layer_name, type,
                    num_blobs, want->name, want->type, want->num_blobs);
        for (int64_t j = 0; ok && j < num_blobs; ++j) {
            cblob_blob *blob = NULL;
            char why[512] = "";
            ok = cblob_model_layer_blob(model, i, j, &blob) == CBLOB_OK &&
                 stats_match(blob, &want->blobs[j], why, sizeof why) && want->blobs[j].has_stats;
            if (!ok)
                fprintf(stderr, "%s: %s.blobs[%" PRId64 "]: %s\n", path, want->name, j, why);
            cblob_blob_destroy(blob);
        }
    }
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
    return ok;
}

static bool check_blob_file(const char *path, const char *expected_path)
{
    expected_blob expected;
    if (!parse_blob_file(expected_path, &expected)) {
        fprintf(stderr, "%s: cannot parse\n", expected_path);
        return false;
    }
    cblob_context *ctx = NULL;
    cblob_blob *blob = NULL;
    char why[512] = "";
    bool ok = cblob_context_create(&ctx) == CBLOB_OK && cblob_blob_create_from_proto_file(ctx, path, &blob) == CBLOB_OK;
    if (!ok)
        fprintf(stderr, "%s: %s\n", path, cblob_last_error_message());
    ok = ok && stats_match(blob, &expected, why, sizeof why);
    if (!ok)
        fprintf(stderr, "%s: %s\n", path, why);
    cblob_head head;
    ok = ok && cblob_blob_head(blob, CBLOB_PART_DIFF, &head) == CBLOB_OK && head == CBLOB_HEAD_UNINITIALIZED;
    cblob_proto_kind kind = 0;
    ok = ok && cblob_proto_detect_file(path, &kind) == CBLOB_OK && kind == CBLOB_PROTO_BLOB;
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
    return ok;
}

TEST(caffe_models_match_their_layers_txt)
{
    skip_unless_data();
    const int checked = for_each_file(".caffemodel", ".layers.txt", check_model_file);
    CHECK_MSG(checked > 0, "%s", checked < 0 ? "a model differs from its .layers.txt" : "no model with a .layers.txt");
}

TEST(caffe_blobs_match_their_blob_txt)
{
    skip_unless_data();
    const int checked = for_each_file(".binaryproto", ".blob.txt", check_blob_file);
    CHECK_MSG(checked > 0, "%s", checked < 0 ? "a blob differs from its .blob.txt" : "no blob with a .blob.txt");
}

TEST(caffe_files_round_trip_through_cblob_bit_exactly)
{
    /* Read, write, read again: same names, shapes and values (Caffe files are float32). */
    skip_unless_data();
    char path[4096];
    snprintf(path, sizeof path, "%s/lenet_iter_10000.caffemodel", CBLOB_CAFFE_DATA_DIR);
    if (access(path, R_OK) != 0)
        SKIP("lenet_iter_10000.caffemodel is absent");
    cblob_context *ctx = NULL;
    cblob_model *model = NULL, *again = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_model_open_file(ctx, path, &model));
    size_t size = 0;
    CHECK_OK(cblob_model_to_proto(model, 0, NULL, 0, &size));
    uint8_t *bytes = malloc(size);
    CHECK_OK(cblob_model_to_proto(model, 0, bytes, size, &size));
    CHECK_OK(cblob_model_open(ctx, bytes, size, &again));
    int64_t layers = 0, layers_again = 0;
    CHECK_OK(cblob_model_num_layers(model, &layers));
    CHECK_OK(cblob_model_num_layers(again, &layers_again));
    CHECK_EQ_INT(layers, layers_again);
    for (int64_t i = 0; i < layers; ++i) {
        int64_t n = 0;
        CHECK_OK(cblob_model_layer_num_blobs(model, i, &n));
        for (int64_t j = 0; j < n; ++j) {
            cblob_blob *a = NULL, *b = NULL;
            CHECK_OK(cblob_model_layer_blob(model, i, j, &a));
            CHECK_OK(cblob_model_layer_blob(again, i, j, &b));
            const bool same = ft_same_values(a, b, CBLOB_PART_DATA);
            cblob_blob_destroy(a), cblob_blob_destroy(b);
            CHECK(same);
        }
    }
    free(bytes);
    cblob_model_destroy(model), cblob_model_destroy(again);
    cblob_context_destroy(ctx);
}
