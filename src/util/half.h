/* SPDX-License-Identifier: BSD-2-Clause */
/* 16-bit floats (src/util): IEEE half precision (NumPy's float16, safetensors' F16) and bfloat16
 * (safetensors' BF16), widened exactly to float32. The one converter of cblob. */
#ifndef CBLOB_UTIL_HALF_H
#define CBLOB_UTIL_HALF_H

#include <stdint.h>

float cb_half_to_float(uint16_t half);
float cb_bfloat16_to_float(uint16_t bits);

#endif
