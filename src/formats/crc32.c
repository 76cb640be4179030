/* SPDX-License-Identifier: BSD-2-Clause */
/* The zip format's CRC-32 (zlib's crc32) at memory speed where the CPU multiplies without carries.
 *
 * zlib 1.2.13 (Debian 12's) computes it a word at a time: 0.3-0.7 GB/s on this project's VM,
 * slower than reading the bytes from the page cache, so an npz read spent more time checking its
 * members than reading them. With PCLMULQDQ the bytes are folded 64 at a time into four 128-bit
 * remainders (Gopal et al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
 * Instruction", Intel, 2009; the constants are the bit-reflected ones of that paper for the
 * polynomial 0x04C11DB7, as Chromium's zlib uses them), then folded to one and reduced (Barrett).
 * Runs shorter than 64 bytes, the tail past the last 16, and CPUs without the instruction go to
 * zlib. The result is zlib's, bit for bit (tests/formats: every length and alignment against
 * zlib). */
#include "crc32.h"

#include <zlib.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CB_CRC32_CLMUL 1
#endif

/* zlib takes an unsigned int of bytes at a time. */
static uint32_t crc32_zlib(uint32_t crc, const uint8_t *bytes, size_t size)
{
    for (size_t done = 0; done < size;) {
        const size_t step = size - done < ((size_t)1 << 30) ? size - done : ((size_t)1 << 30);
        crc = (uint32_t)crc32(crc, bytes + done, (uInt)step);
        done += step;
    }
    return crc;
}

#ifdef CB_CRC32_CLMUL

/* The CRC register (not inverted) after `size` bytes (at least 64, a multiple of 16) from the
 * register `crc`. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t fold_clmul(uint32_t crc, const uint8_t *bytes,
                                                                   size_t size)
{
    /* x^(4*128+32) mod P and x^(4*128-32) mod P (fold by 64 bytes), the same for 16 bytes, then
     * x^64 mod P, and the Barrett constants (P and floor(x^64 / P)), all bit-reflected. */
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
    const __m128i k5k0 = _mm_set_epi64x(0, 0x0163cd6124);
    const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
    const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);

    __m128i x1 = _mm_loadu_si128((const __m128i *)(bytes + 0x00));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(bytes + 0x10));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(bytes + 0x20));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(bytes + 0x30));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
    bytes += 64;
    size -= 64;
    while (size >= 64) {
        const __m128i x5 = _mm_clmulepi64_si128(x1, k1k2, 0x00);
        const __m128i x6 = _mm_clmulepi64_si128(x2, k1k2, 0x00);
        const __m128i x7 = _mm_clmulepi64_si128(x3, k1k2, 0x00);
        const __m128i x8 = _mm_clmulepi64_si128(x4, k1k2, 0x00);
        x1 = _mm_clmulepi64_si128(x1, k1k2, 0x11);
        x2 = _mm_clmulepi64_si128(x2, k1k2, 0x11);
        x3 = _mm_clmulepi64_si128(x3, k1k2, 0x11);
        x4 = _mm_clmulepi64_si128(x4, k1k2, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), _mm_loadu_si128((const __m128i *)(bytes + 0x00)));
        x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), _mm_loadu_si128((const __m128i *)(bytes + 0x10)));
        x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), _mm_loadu_si128((const __m128i *)(bytes + 0x20)));
        x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), _mm_loadu_si128((const __m128i *)(bytes + 0x30)));
        bytes += 64;
        size -= 64;
    }
    /* Four remainders into one, then the rest 16 bytes at a time. */
    const __m128i next[3] = {x2, x3, x4};
    for (int i = 0; i < 3; ++i) {
        const __m128i low = _mm_clmulepi64_si128(x1, k3k4, 0x00);
        x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11), next[i]), low);
    }
    while (size >= 16) {
        const __m128i low = _mm_clmulepi64_si128(x1, k3k4, 0x00);
        x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x11),
                                         _mm_loadu_si128((const __m128i *)bytes)),
                           low);
        bytes += 16;
        size -= 16;
    }
    /* 128 bits to 64, then Barrett's reduction to 32. */
    __m128i x = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(x1, k3k4, 0x10));
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), k5k0, 0x00), _mm_srli_si128(x, 4));
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, low32), poly, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), poly, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x, t), 1);
}

static int have_clmul(void)
{
    static int known = -1; /* a race only computes the same answer twice */
    int have = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
        __atomic_store_n(&known, have, __ATOMIC_RELAXED);
    }
    return have;
}

#endif

uint32_t cb_crc32(uint32_t crc, const void *bytes, size_t size)
{
    const uint8_t *at = bytes;
#ifdef CB_CRC32_CLMUL
    if (size >= 64 && have_clmul()) {
        const size_t folded = size & ~(size_t)15;
        crc = ~fold_clmul(~crc, at, folded);
        at += folded;
        size -= folded;
    }
#endif
    return crc32_zlib(crc, at, size);
}

/* a * b modulo CRC-32's polynomial, in its reflected form (bit 31 is x^0); a is not 0. zlib's
 * multmodp: its crc32_combine is not used, as it would tie the library to zlib 1.2.2's symbol
 * version (a wheel takes zlib from the system only unversioned, bindings/python/tests/check_wheel.py). */
static uint32_t multiply_mod_crc(uint32_t a, uint32_t b)
{
    uint32_t m = (uint32_t)1 << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ 0xedb88320u : b >> 1;
    }
    return p;
}

uint32_t cb_crc32_combine(uint32_t first, uint32_t second, uint64_t second_size)
{
    /* CRC-32 is linear: crc(A B) = crc(A) * x^(8 |B|) + crc(B) modulo the polynomial. */
    uint32_t power = (uint32_t)1 << 30; /* x^1, squared to x^8: one byte */
    for (int i = 0; i < 3; ++i)
        power = multiply_mod_crc(power, power);
    uint32_t shift = (uint32_t)1 << 31; /* x^0 */
    for (; second_size > 0; second_size >>= 1) {
        if (second_size & 1)
            shift = multiply_mod_crc(power, shift);
        power = multiply_mod_crc(power, power);
    }
    return multiply_mod_crc(shift, first) ^ second;
}
