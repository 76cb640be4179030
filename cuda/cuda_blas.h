/* SPDX-License-Identifier: BSD-2-Clause */
/* cuBLAS for the float32 and float64 ops that codegen/ops.yaml marks `cublas: true` (Caffe's
 * caffe_gpu_axpy, caffe_gpu_scal), on handles of the work's queue (one context's stream).
 *
 * The sums (Caffe's caffe_gpu_asum and caffe_gpu_dot of a vector with itself) are here too, though
 * the library's sums are the generated two-pass kernels (bit-identical for any grid; cuBLAS adds
 * float32 in float, in an order of its own): bench_gpu times both on a GPU, so that the faster
 * correct one can be chosen by measurement. They come back to the host: the calls wait for their
 * stream, with no lock held, as Caffe's wait for the sum. */
#ifndef CBLOB_CUDA_BLAS_H
#define CBLOB_CUDA_BLAS_H

#include <stdint.h>

#include "backend.h"

cblob_status cb_cublas_asum(const cb_device *device, cblob_dtype dtype, int64_t n, const void *x, double *out);
cblob_status cb_cublas_sumsq(const cb_device *device, cblob_dtype dtype, int64_t n, const void *x, double *out);
cblob_status cb_cublas_axpy(const cb_device *device, cblob_dtype dtype, int64_t n, double alpha, const void *x, void *y);
cblob_status cb_cublas_scale(const cb_device *device, cblob_dtype dtype, int64_t n, double alpha, void *x);

#endif
