/* SPDX-License-Identifier: BSD-2-Clause */
/* A lost device (issue 13, 2.7): a fault in a kernel is a sticky error of the primary context;
 * every later call on the device fails, so cblob says so with a status of its own rather than a
 * generic CBLOB_ERR_DEVICE in whichever unrelated call meets it. With
 * CBLOB_CUDA_LAUNCH_BLOCKING=1 (suite gpu_faults_blocking) the call that queued the faulting
 * kernel reports it, naming the kernel. On the double only: a fault cannot be made on demand on
 * a GPU, and would ruin the process's device. */
#include <stdlib.h>
#include <string.h>

#include "gpu_support.h"

#define COUNT 100

static bool launch_blocking(void)
{
    const char *knob = getenv("CBLOB_CUDA_LAUNCH_BLOCKING");
    return knob != NULL && strcmp(knob, "1") == 0;
}

TEST(a_fault_loses_the_device_and_every_later_call_says_so)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("a fault is made on the test double only");
    gpu_blob faulting, unrelated;
    CHECK_OK(open_blob(&faulting, CBLOB_DTYPE_INT32, COUNT));
    CHECK_OK(open_blob(&unrelated, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(cblob_context_set_mode(faulting.ctx, CBLOB_MODE_GPU));
    CHECK_OK(cblob_context_set_mode(unrelated.ctx, CBLOB_MODE_GPU));
    CHECK_OK(cblob_blob_fill(unrelated.blob, CBLOB_PART_DATA, 1.0));
    const void *ready = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(faulting.blob, CBLOB_PART_DATA, &ready));
    CHECK(gpu_inject_fault(700 /* CUDA_ERROR_ILLEGAL_ADDRESS */));
    const cblob_status filled = cblob_blob_fill(faulting.blob, CBLOB_PART_DATA, 5.0);
    if (launch_blocking()) {
        /* The call that queued the kernel waits for it and names it. */
        CHECK_EQ_INT(filled, CBLOB_ERR_DEVICE_LOST);
        CHECK(strstr(cblob_last_error_message(), "cblob_fill_i32") != NULL);
    } else {
        CHECK(filled == CBLOB_OK || filled == CBLOB_ERR_DEVICE_LOST); /* whenever the kernel ran */
    }
    /* Another context's blob, never near the fault, meets it too. */
    const void *host = NULL;
    CHECK_ERROR(cblob_blob_cpu_ptr(unrelated.blob, CBLOB_PART_DATA, &host), CBLOB_ERR_DEVICE_LOST);
    CHECK(strstr(cblob_last_error_message(), "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL);
    CHECK(strstr(cblob_last_error_message(), "restart") != NULL);
    CHECK(strcmp(cblob_status_name(CBLOB_ERR_DEVICE_LOST), "CBLOB_ERR_DEVICE_LOST") == 0);
    close_blob(&unrelated);
    close_blob(&faulting);
}
