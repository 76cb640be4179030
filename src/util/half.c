/* SPDX-License-Identifier: BSD-2-Clause */
#include "half.h"

#include <string.h>

static float float_of_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float cb_half_to_float(uint16_t half)
{
    const uint32_t sign = (uint32_t)(half >> 15) << 31, exponent = (half >> 10) & 0x1f, mantissa = half & 0x3ff;
    if (exponent == 0x1f) /* infinity, or NaN with its payload kept */
        return float_of_bits(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0)
        return float_of_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));
    if (mantissa == 0)
        return float_of_bits(sign);
    /* A subnormal half is a normal float: shift the mantissa up to its leading one. */
    uint32_t m = mantissa, e = 113;
    while (!(m & 0x400)) {
        m <<= 1;
        --e;
    }
    return float_of_bits(sign | (e << 23) | ((m & 0x3ff) << 13));
}

float cb_bfloat16_to_float(uint16_t bits)
{
    return float_of_bits((uint32_t)bits << 16);
}
