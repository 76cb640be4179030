/* SPDX-License-Identifier: BSD-2-Clause */
/* README.md's example: a file of any kind opened once, and a sum over one of its blobs. */
#include <cblob/cblob.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "lenet.caffemodel";
    cblob_context *context = NULL;
    cblob_file *file = NULL;
    cblob_model *model = NULL;
    cblob_blob *weights = NULL;
    double sum = 0;
    if (cblob_context_create(&context) != CBLOB_OK ||
        cblob_file_open(context, path, 0, 0, &file) != CBLOB_OK ||   /* any kind, read once */
        cblob_file_model(file, &model) != CBLOB_OK ||                /* the file's own model */
        cblob_model_layer_blob(model, 1, 0, &weights) != CBLOB_OK || /* layer 1's first blob */
        cblob_blob_asum(weights, CBLOB_PART_DATA, &sum) != CBLOB_OK) {
        fprintf(stderr, "%s\n", cblob_last_error_message());          /* "cblob_file_open: ..." */
        return 1;
    }
    printf("sum of |layer 1's weights| = %g\n", sum);
    cblob_blob_destroy(weights);
    cblob_file_destroy(file);
    cblob_context_destroy(context);
    return 0;
}
