/*
 * What the kernels' files share: the AVX2 target attribute, ggml's scalar formats and the fixed order of a vector's
 * horizontal sum (bfk_kernels.c's header states it), and the one-tile-ahead prefetch of the products.
 */
#ifndef BFK_INLINE_H
#define BFK_INLINE_H

#include "bfk.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define BFK_X86 1
#define AVX2 __attribute__((target("avx2,fma,f16c")))
/* vpdpbusd (unsigned by signed bytes, four products into each 32-bit lane) on 256-bit vectors, in its two encodings:
   AVX-VNNI's (Intel since Alder Lake and Sapphire Rapids, AMD since Zen 5) and AVX512-VNNI's with AVX512VL (AMD Zen 4,
   Intel's Cascade Lake and Ice Lake servers, which lack the first). Same instruction, same integers. */
#define VNNI __attribute__((target("avx2,fma,f16c,avxvnni")))
#define VNNI512 __attribute__((target("avx2,fma,f16c,avx512vl,avx512vnni")))
/* The tiles are written once with their sizes as parameters and must be inlined where the sizes are constants, so
   that their accumulators live in registers */
#define INLINE __attribute__((always_inline)) inline
#else
#define BFK_X86 0
#endif

/* ------------------------------------------------------------------ scalar helpers */

static inline float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t) (h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t mant = h & 0x3FF;
    uint32_t bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000 | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {
            float v = (float) mant * 0x1p-24f;
            return sign ? -v : v;
        }
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t read_u16(const uint8_t *p) {
    return (uint16_t) (p[0] | (p[1] << 8));
}

static inline float read_half(const uint8_t *p) {
    return half_to_float(read_u16(p));
}

static inline float bf16_to_float(uint16_t b) {
    uint32_t bits = (uint32_t) b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Q4_K's 6-bit scale and min of sub-block j (ggml's get_scale_min_k4). */
static inline void scale_min_k4(int j, const uint8_t *q, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

static inline float hsum8(const float v[8]) {
    float a0 = v[0] + v[4], a1 = v[1] + v[5], a2 = v[2] + v[6], a3 = v[3] + v[7];
    return (a0 + a2) + (a1 + a3);
}

#if BFK_X86

AVX2 static INLINE float hsum256(__m256 v) {
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}


/*
 * Prefetching. A block's decoding takes a couple of dozen instructions, so the processor's window holds few blocks
 * and few cache lines in flight: without prefetching, a product waits on memory latency, not bandwidth. A tile reads
 * its NT rows side by side, and the next tile's rows follow them in memory, so as a tile passes its k-th block it
 * asks for the k-th stretch of the next tile's bytes: always one tile ahead, whatever the row length. (A fixed
 * distance within the row, 768 bytes, fell into the tile's own second row for 768-wide matrices, whose Q8_0 rows are
 * 816 bytes: half the requests were wasted and a Q8_0 product read 4-6 GB/s on one thread; one tile ahead, 16-19.)
 */
AVX2 static INLINE void prefetch_next_tile(const bfk_matrix *w, int n, int nt, size_t bytes_per_step, int step) {
    const char *ahead = (const char *) w->data + (size_t) (n + nt) * w->row_bytes + (size_t) step * nt * bytes_per_step;
    for (size_t off = 0; off < nt * bytes_per_step; off += 64) {
        _mm_prefetch(ahead + off, _MM_HINT_T0);
    }
}

#endif /* BFK_X86 */

#endif
