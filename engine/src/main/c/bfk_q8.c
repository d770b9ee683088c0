/*
 * Products of ggml's block formats with activations rounded to 8 bits, as llama.cpp computes them (its
 * vec_dot_q8_0_q8_0, q4_0_q8_0, q6_K_q8_K and q4_K_q8_K): each activation row is cut in blocks of 32 values, a block
 * stored as a float scale d = max|x| / 127 and 32 signed bytes round(x * 127 / max|x|) (to nearest, ties to even), and
 * a product sums whole integers.
 *
 * Q8_0, Q4_0 and Q6_K: a weight block of 32 meets one activation block in one integer, the sum of the 32 products
 * (Q6_K: each sub-block of 16's sum times its integer scale, the two added), and the blocks join the row's result in
 * order: acc = fma((float) sum, dw * da, acc) from zero, dw the weight block's scale (Q6_K: the super-block's d) and da
 * the activation block's (a whole block's sum lets eight interleaved rows be computed in the lanes of one vector:
 * bfk_x8.c). Q4_K: a weight block of 32 (unsigned values q, 6-bit scale sc and min m) meets one activation block
 * as acc = fma((float) sum of q * a, (d * sc) * da, acc) and mac = fma((float) sum of a, (dmin * m) * da, mac),
 * block after block (d * sc is exact: 11 bits times 6); the result acc - mac. With `add`, out + the result. Sums of whole numbers are exact whatever their
 * order (and below 2^24, so exact as floats), so the vector kernels and the portable loops agree bit for bit.
 *
 * What this changes against the weight-only products: each activation is moved by at most half of its block's step
 * (max|x| / 254), the error llama.cpp's CPU kernels make; see docs/models.md for what it does to logits.
 */
#include "bfk_inline.h"

#include <stdlib.h>

int bfk_q8_supported(int type) {
    return type == BFK_Q8_0 || type == BFK_Q4_0 || type == BFK_Q4_K || type == BFK_Q6_K;
}

size_t bfk_q8_row_bytes(int cols) {
    return ((size_t) cols + (size_t) cols / 8 + (size_t) cols / 4 + 63) / 64 * 64;
}

/* Each half block's sum of its 16 values, after the scales: what the tiles of unsigned weights take off. */
static void half_block_sums(int cols, uint8_t *out) {
    const int8_t *q = (const int8_t *) out;
    int32_t *sums = (int32_t *) (out + cols + cols / 8);
    for (int h = 0; h < cols / 16; h++) {
        int s = 0;
        for (int i = 0; i < 16; i++) {
            s += q[16 * h + i];
        }
        sums[h] = s;
    }
}

/* ------------------------------------------------------------------ quantizing a row */

static void quantize_portable(const float *x, int cols, uint8_t *out) {
    int8_t *q = (int8_t *) out;
    float *ds = (float *) (out + cols);
    for (int b = 0; b < cols / 32; b++) {
        const float *xb = x + 32 * b;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) {
            float a = fabsf(xb[i]);
            amax = a > amax ? a : amax;
        }
        float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        ds[b] = amax / 127.0f;
        for (int i = 0; i < 32; i++) {
            q[32 * b + i] = (int8_t) (int) rintf(xb[i] * id);
        }
    }
}

#if BFK_X86
AVX2 static void quantize_avx2(const float *x, int cols, uint8_t *out) {
    int8_t *q = (int8_t *) out;
    float *ds = (float *) (out + cols);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int b = 0; b < cols / 32; b++) {
        const float *xb = x + 32 * b;
        __m256 v0 = _mm256_loadu_ps(xb), v1 = _mm256_loadu_ps(xb + 8);
        __m256 v2 = _mm256_loadu_ps(xb + 16), v3 = _mm256_loadu_ps(xb + 24);
        __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                 _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        float amax = _mm_cvtss_f32(m4);
        float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        ds[b] = amax / 127.0f;
        __m256 mul = _mm256_set1_ps(id);
        const int round = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, mul), round));
        __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, mul), round));
        __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, mul), round));
        __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, mul), round));
        /* the packs interleave the 128-bit halves; the permutation puts the 32 bytes back in order */
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *) (q + 32 * b), p);
    }
}
#endif

void bfk_quantize_q8(const float *x, int cols, uint8_t *out) {
#if BFK_X86
    if (bfk_uses_avx2()) {
        quantize_avx2(x, cols, out);
        half_block_sums(cols, out);
        return;
    }
#endif
    quantize_portable(x, cols, out);
    half_block_sums(cols, out);
}

/* ------------------------------------------------------------------ portable products */

/* Lane j of a block of 32 (values as ints): the sum of the products of values 4j..4j+3. */
static inline int lane_dot(const int *w, const int8_t *a, int j) {
    return w[4 * j] * a[4 * j] + w[4 * j + 1] * a[4 * j + 1] + w[4 * j + 2] * a[4 * j + 2] + w[4 * j + 3] * a[4 * j + 3];
}

static float dot_q8_portable(const bfk_matrix *w, int n, const uint8_t *qx) {
    const uint8_t *row = w->data + (size_t) n * w->row_bytes;
    const int8_t *a = (const int8_t *) qx;
    const float *ad = (const float *) (qx + w->cols);
    int v[32];
    switch (w->type) {
        case BFK_Q8_0:
        case BFK_Q4_0: {
            float r = 0.0f;
            for (int b = 0; b < w->cols / 32; b++) {
                const uint8_t *blk = row + (w->type == BFK_Q8_0 ? 34 : 18) * (size_t) b;
                for (int i = 0; i < 16; i++) {
                    if (w->type == BFK_Q8_0) {
                        v[i] = (int8_t) blk[2 + i];
                        v[16 + i] = (int8_t) blk[18 + i];
                    } else {
                        v[i] = (blk[2 + i] & 0x0F) - 8;
                        v[16 + i] = (blk[2 + i] >> 4) - 8;
                    }
                }
                int sum = 0;
                for (int i = 0; i < 32; i++) {
                    sum += v[i] * a[32 * b + i];
                }
                r = fmaf((float) sum, read_half(blk) * ad[b], r);
            }
            return r;
        }
        case BFK_Q6_K: {
            float r = 0.0f;
            for (int b = 0; b < w->cols / 256; b++) {
                const uint8_t *blk = row + 210 * (size_t) b;
                const int8_t *sc = (const int8_t *) (blk + 192);
                float d = read_half(blk + 208);
                for (int c = 0; c < 2; c++) {
                    for (int k = 0; k < 4; k++) {
                        const uint8_t *l = blk + 64 * c + 32 * (k & 1), *h = blk + 128 + 32 * c;
                        for (int i = 0; i < 32; i++) {
                            int nib = k >= 2 ? l[i] >> 4 : l[i] & 0x0F;
                            v[i] = (nib | (((h[i] >> (2 * k)) & 3) << 4)) - 32;
                        }
                        int s = 8 * c + 2 * k, blk32 = 8 * b + 4 * c + k, sum = 0;
                        for (int j = 0; j < 8; j++) {
                            sum += sc[s + j / 4] * lane_dot(v, a + 32 * blk32, j);
                        }
                        r = fmaf((float) sum, d * ad[blk32], r);
                    }
                }
            }
            return r;
        }
        case BFK_Q4_K: {
            float r = 0.0f, mins = 0.0f;
            for (int b = 0; b < w->cols / 256; b++) {
                const uint8_t *blk = row + 144 * (size_t) b;
                float d = read_half(blk), dmin = read_half(blk + 2);
                for (int s = 0; s < 8; s++) {
                    int sc, m;
                    scale_min_k4(s, blk + 4, &sc, &m);
                    const uint8_t *q = blk + 16 + 32 * (s / 2);
                    int blk32 = 8 * b + s, dot = 0, sum = 0;
                    const int8_t *as = a + 32 * blk32;
                    for (int i = 0; i < 32; i++) {
                        dot += ((s & 1) ? q[i] >> 4 : q[i] & 0x0F) * as[i];
                        sum += as[i];
                    }
                    r = fmaf((float) dot, (d * (float) sc) * ad[blk32], r);
                    mins = fmaf((float) sum, (dmin * (float) m) * ad[blk32], mins);
                }
            }
            return r - mins;
        }
        default:
            return 0;
    }
}

/* ------------------------------------------------------------------ AVX2 products */
#if BFK_X86

#define Q8_MAX_MT 4

/* The 8 lanes of |w| . (a signed as w), pairs of bytes then quadruples: maddubs multiplies unsigned by signed bytes
   (no pair of these reaches its int16 saturation: |w| <= 128 and |a| <= 127), madd sums pairs of int16 by `by`. */
AVX2 static INLINE __m256i lanes_by(__m256i w, __m256i a, __m256i by) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w)), by);
}

AVX2 static INLINE __m256i decode32_q8_0(const uint8_t *blk) {
    return _mm256_loadu_si256((const __m256i *) (blk + 2));
}

AVX2 static INLINE __m256i decode32_q4_0(const uint8_t *blk) {
    __m128i raw = _mm_loadu_si128((const __m128i *) (blk + 2));
    __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
    return _mm256_sub_epi8(v, _mm256_set1_epi8(8));
}

#define Q8_MAX_NT 4

/* The sum of an 8-bit row's block b of 32 values (from its half blocks' sums). */
static inline int block_sum(const uint8_t *row, int cols, int b) {
    const int32_t *halves = (const int32_t *) (row + cols + cols / 8);
    return halves[2 * b] + halves[2 * b + 1];
}

/* The four rows' block sums of eight lanes each, as four integers (exact: any order of the additions). */
AVX2 static INLINE __m128i row_sums4(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
    __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* Q8_0 and Q4_0 in ggml's layout (bfk_x8.c has the interleaved one): NT rows side by side, lane t of the 4-lane
   accumulators row n + t. OP(w, a) gives 8 lanes summing to the block's products plus OFFSET times the activations'
   sum, which is taken off. */
#define Q8_BLOCK32_TILE(NAME, ATTR, DECODE, BLOCK_BYTES, OP, OFFSET) \
ATTR static INLINE void NAME(const bfk_matrix *w, const uint8_t *qx, size_t ldq, float *out, int ldo, int n, int add, \
                             const int MT, const int NT) { \
    __m128 acc[Q8_MAX_MT]; \
    for (int i = 0; i < Q8_MAX_MT; i++) acc[i] = _mm_setzero_ps(); \
    for (int b = 0; b < w->cols / 32; b++) { \
        prefetch_next_tile(w, n, NT, BLOCK_BYTES, b); \
        __m256i wv[Q8_MAX_NT]; \
        uint16_t sc[Q8_MAX_NT] = {0, 0, 0, 0}; \
        for (int t = 0; t < NT; t++) { \
            const uint8_t *blk = w->data + (size_t) (n + t) * w->row_bytes + (size_t) BLOCK_BYTES * b; \
            wv[t] = DECODE(blk); \
            sc[t] = read_u16(blk); \
        } \
        __m128 dw = _mm_cvtph_ps(_mm_setr_epi16((short) sc[0], (short) sc[1], (short) sc[2], (short) sc[3], 0, 0, 0, 0)); \
        for (int i = 0; i < MT; i++) { \
            const uint8_t *row = qx + (size_t) i * ldq; \
            __m256i a = _mm256_loadu_si256((const __m256i *) (row + 32 * b)); \
            __m256i v[Q8_MAX_NT]; \
            for (int t = 0; t < Q8_MAX_NT; t++) v[t] = t < NT ? OP(wv[t], a) : _mm256_setzero_si256(); \
            __m128i s = row_sums4(v[0], v[1], v[2], v[3]); \
            if (OFFSET) s = _mm_sub_epi32(s, _mm_set1_epi32((OFFSET) * block_sum(row, w->cols, b))); \
            __m128 da = _mm_broadcast_ss((const float *) (row + w->cols) + b); \
            acc[i] = _mm_fmadd_ps(_mm_cvtepi32_ps(s), _mm_mul_ps(dw, da), acc[i]); \
        } \
    } \
    for (int i = 0; i < MT; i++) { \
        float r[4]; \
        _mm_storeu_ps(r, acc[i]); \
        for (int t = 0; t < NT; t++) { \
            float *o = out + (size_t) i * ldo + n + t; \
            *o = add ? *o + r[t] : r[t]; \
        } \
    } \
}

AVX2 static INLINE __m256i block_lanes_avx2(__m256i w, __m256i a) {
    return lanes_by(w, a, _mm256_set1_epi16(1));
}

Q8_BLOCK32_TILE(tile_q8_0_q8, AVX2, decode32_q8_0, 34, block_lanes_avx2, 0)
Q8_BLOCK32_TILE(tile_q4_0_q8, AVX2, decode32_q4_0, 18, block_lanes_avx2, 0)

/* Q6_K: the two sub-blocks of 16 that meet one activation block are decoded together and madd by their scales, the
   block's integer sum joining the row's result as Q8_0's does; rows side by side as there. */
AVX2 static INLINE void tile_q6_k_q8(const bfk_matrix *w, const uint8_t *qx, size_t ldq, float *out, int ldo, int n,
                                     int add, const int MT, const int NT) {
    __m128 acc[Q8_MAX_MT];
    for (int i = 0; i < Q8_MAX_MT; i++) acc[i] = _mm_setzero_ps();
    const __m256i mask = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
    for (int b = 0; b < w->cols / 256; b++) {
        prefetch_next_tile(w, n, NT, 210, b);
        const uint8_t *blk[Q8_MAX_NT];
        uint16_t dh[Q8_MAX_NT] = {0, 0, 0, 0};
        for (int t = 0; t < NT; t++) {
            blk[t] = w->data + (size_t) (n + t) * w->row_bytes + (size_t) 210 * b;
            dh[t] = read_u16(blk[t] + 208);
        }
        __m128 d = _mm_cvtph_ps(_mm_setr_epi16((short) dh[0], (short) dh[1], (short) dh[2], (short) dh[3], 0, 0, 0, 0));
        for (int c = 0; c < 2; c++) {
            for (int k = 0; k < 4; k++) {
                int s = 8 * c + 2 * k, blk32 = 8 * b + 4 * c + k;
                __m256i q[Q8_MAX_NT], scales[Q8_MAX_NT];
                for (int t = 0; t < NT; t++) {
                    __m256i h = _mm256_loadu_si256((const __m256i *) (blk[t] + 128 + 32 * c));
                    __m256i l = _mm256_loadu_si256((const __m256i *) (blk[t] + 64 * c + 32 * (k & 1)));
                    __m256i nib = k >= 2 ? _mm256_and_si256(_mm256_srli_epi16(l, 4), mask) : _mm256_and_si256(l, mask);
                    __m256i hb = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(2 * k)), three);
                    q[t] = _mm256_sub_epi8(_mm256_or_si256(nib, _mm256_slli_epi16(hb, 4)), bias);
                    const int8_t *sc = (const int8_t *) (blk[t] + 192);
                    scales[t] = _mm256_set_m128i(_mm_set1_epi16(sc[s + 1]), _mm_set1_epi16(sc[s]));
                }
                for (int i = 0; i < MT; i++) {
                    const uint8_t *row = qx + (size_t) i * ldq;
                    __m256i a = _mm256_loadu_si256((const __m256i *) (row + 32 * blk32));
                    __m256i v[Q8_MAX_NT];
                    for (int t = 0; t < Q8_MAX_NT; t++) v[t] = t < NT ? lanes_by(q[t], a, scales[t]) : _mm256_setzero_si256();
                    __m128 da = _mm_broadcast_ss((const float *) (row + w->cols) + blk32);
                    acc[i] = _mm_fmadd_ps(_mm_cvtepi32_ps(row_sums4(v[0], v[1], v[2], v[3])), _mm_mul_ps(d, da), acc[i]);
                }
            }
        }
    }
    for (int i = 0; i < MT; i++) {
        float r[4];
        _mm_storeu_ps(r, acc[i]);
        for (int t = 0; t < NT; t++) {
            float *o = out + (size_t) i * ldo + n + t;
            *o = add ? *o + r[t] : r[t];
        }
    }
}

/* Q4_K: unsigned 4-bit values meet the activations directly (maddubs), rows side by side as Q8_0's; each block's
   integer sum by d * scale * da, and the activations' block sum by dmin * min * da, join the row's two accumulators. */
AVX2 static INLINE void tile_q4_k_q8(const bfk_matrix *w, const uint8_t *qx, size_t ldq, float *out, int ldo, int n,
                                     int add, const int MT, const int NT) {
    __m128 acc[Q8_MAX_MT], mac[Q8_MAX_MT];
    for (int i = 0; i < Q8_MAX_MT; i++) acc[i] = mac[i] = _mm_setzero_ps();
    const __m256i mask = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    for (int b = 0; b < w->cols / 256; b++) {
        prefetch_next_tile(w, n, NT, 144, b);
        const uint8_t *blk[Q8_MAX_NT];
        uint16_t dh[Q8_MAX_NT] = {0, 0, 0, 0}, mh[Q8_MAX_NT] = {0, 0, 0, 0};
        for (int t = 0; t < NT; t++) {
            blk[t] = w->data + (size_t) (n + t) * w->row_bytes + (size_t) 144 * b;
            dh[t] = read_u16(blk[t]);
            mh[t] = read_u16(blk[t] + 2);
        }
        __m128 d = _mm_cvtph_ps(_mm_setr_epi16((short) dh[0], (short) dh[1], (short) dh[2], (short) dh[3], 0, 0, 0, 0));
        __m128 dmin = _mm_cvtph_ps(_mm_setr_epi16((short) mh[0], (short) mh[1], (short) mh[2], (short) mh[3], 0, 0, 0, 0));
        for (int s = 0; s < 8; s++) {
            int blk32 = 8 * b + s, sc[Q8_MAX_NT] = {0, 0, 0, 0}, m[Q8_MAX_NT] = {0, 0, 0, 0};
            __m256i q[Q8_MAX_NT];
            for (int t = 0; t < NT; t++) {
                scale_min_k4(s, blk[t] + 4, &sc[t], &m[t]);
                __m256i raw = _mm256_loadu_si256((const __m256i *) (blk[t] + 16 + 32 * (s / 2)));
                q[t] = (s & 1) ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask) : _mm256_and_si256(raw, mask);
            }
            __m128 dsc = _mm_mul_ps(d, _mm_cvtepi32_ps(_mm_setr_epi32(sc[0], sc[1], sc[2], sc[3])));
            __m128 dm = _mm_mul_ps(dmin, _mm_cvtepi32_ps(_mm_setr_epi32(m[0], m[1], m[2], m[3])));
            for (int i = 0; i < MT; i++) {
                const uint8_t *row = qx + (size_t) i * ldq;
                __m256i a = _mm256_loadu_si256((const __m256i *) (row + 32 * blk32));
                __m256i v[Q8_MAX_NT];
                for (int t = 0; t < Q8_MAX_NT; t++) {
                    v[t] = t < NT ? _mm256_madd_epi16(_mm256_maddubs_epi16(q[t], a), ones) : _mm256_setzero_si256();
                }
                __m128 dots = _mm_cvtepi32_ps(row_sums4(v[0], v[1], v[2], v[3]));
                __m128 sum = _mm_set1_ps((float) block_sum(row, w->cols, blk32));
                __m128 da = _mm_broadcast_ss((const float *) (row + w->cols) + blk32);
                acc[i] = _mm_fmadd_ps(dots, _mm_mul_ps(dsc, da), acc[i]);
                mac[i] = _mm_fmadd_ps(sum, _mm_mul_ps(dm, da), mac[i]);
            }
        }
    }
    for (int i = 0; i < MT; i++) {
        float r[4];
        _mm_storeu_ps(r, _mm_sub_ps(acc[i], mac[i]));
        for (int t = 0; t < NT; t++) {
            float *o = out + (size_t) i * ldo + n + t;
            *o = add ? *o + r[t] : r[t];
        }
    }
}

AVX2 static void tile_q8_avx2(const bfk_matrix *w, const uint8_t *qx, size_t ldq, float *out, int ldo, int n, int add,
                              int mt, int nt) {
#define DISPATCH(CALL) \
    switch (mt * 8 + nt) { \
        case 9: CALL(1, 1); break; case 10: CALL(1, 2); break; \
        case 11: CALL(1, 3); break; case 12: CALL(1, 4); break; \
        case 17: CALL(2, 1); break; case 18: CALL(2, 2); break; \
        case 25: CALL(3, 1); break; case 33: CALL(4, 1); break; \
        default: break; \
    }
    switch (w->type) {
        case BFK_Q8_0: {
#define C(M, N) tile_q8_0_q8(w, qx, ldq, out, ldo, n, add, M, N)
            DISPATCH(C)
#undef C
            break;
        }
        case BFK_Q4_0: {
#define C(M, N) tile_q4_0_q8(w, qx, ldq, out, ldo, n, add, M, N)
            DISPATCH(C)
#undef C
            break;
        }
        case BFK_Q6_K: {
#define C(M, N) tile_q6_k_q8(w, qx, ldq, out, ldo, n, add, M, N)
            DISPATCH(C)
#undef C
            break;
        }
        default: {
#define C(M, N) tile_q4_k_q8(w, qx, ldq, out, ldo, n, add, M, N)
            DISPATCH(C)
#undef C
            break;
        }
    }
#undef DISPATCH
}

/*
 * AVX-VNNI: vpdpbusd adds to each 32-bit lane the four products of unsigned by signed bytes. Weights are made
 * unsigned by an offset (Q8_0: w + 128, the sign bit flipped; Q4_0: the stored nibble, w + 8), and the offset times
 * the block's activation sum (written beside the activations when they are rounded) is taken off the block's sum: the
 * same integer, so the same bits as the AVX2 and the portable products (Int8ProductTest).
 */

AVX2 static INLINE __m256i unsigned32_q8_0(const uint8_t *blk) {
    return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) (blk + 2)), _mm256_set1_epi8((char) 0x80));
}

AVX2 static INLINE __m256i unsigned32_q4_0(const uint8_t *blk) {
    __m128i raw = _mm_loadu_si128((const __m128i *) (blk + 2));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
}

VNNI static INLINE __m256i block_lanes_vnni(__m256i w, __m256i a) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w, a);
}

VNNI512 static INLINE __m256i block_lanes_vnni512(__m256i w, __m256i a) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, a);
}

Q8_BLOCK32_TILE(tile_q8_0_vnni, VNNI, unsigned32_q8_0, 34, block_lanes_vnni, 128)
Q8_BLOCK32_TILE(tile_q4_0_vnni, VNNI, unsigned32_q4_0, 18, block_lanes_vnni, 8)
Q8_BLOCK32_TILE(tile_q8_0_vnni512, VNNI512, unsigned32_q8_0, 34, block_lanes_vnni512, 128)
Q8_BLOCK32_TILE(tile_q4_0_vnni512, VNNI512, unsigned32_q4_0, 18, block_lanes_vnni512, 8)

#define Q8_TILE_CASES(TILE) \
    switch (mt * 8 + nt) { \
        case 9: TILE(w, qx, ldq, out, ldo, n, add, 1, 1); break; \
        case 10: TILE(w, qx, ldq, out, ldo, n, add, 1, 2); break; \
        case 11: TILE(w, qx, ldq, out, ldo, n, add, 1, 3); break; \
        case 12: TILE(w, qx, ldq, out, ldo, n, add, 1, 4); break; \
        case 17: TILE(w, qx, ldq, out, ldo, n, add, 2, 1); break; \
        case 18: TILE(w, qx, ldq, out, ldo, n, add, 2, 2); break; \
        case 25: TILE(w, qx, ldq, out, ldo, n, add, 3, 1); break; \
        case 33: TILE(w, qx, ldq, out, ldo, n, add, 4, 1); break; \
        default: break; \
    }

/* A tile of Q8_0 or Q4_0 products with one of the vpdpbusd encodings. */
#define Q8_VNNI_TILE(SUFFIX, ATTR) \
ATTR static void tile_##SUFFIX(const bfk_matrix *w, const uint8_t *qx, size_t ldq, float *out, int ldo, int n, \
                               int add, int mt, int nt) { \
    if (w->type == BFK_Q8_0) { \
        Q8_TILE_CASES(tile_q8_0_##SUFFIX) \
    } else { \
        Q8_TILE_CASES(tile_q4_0_##SUFFIX) \
    } \
}

Q8_VNNI_TILE(vnni, VNNI)
Q8_VNNI_TILE(vnni512, VNNI512)

/* As the float products: columns in groups of 16, rows in groups of up to 4, columns four at a time for one row
   (a decode step's: the activation block is loaded once for four weight rows) and two at a time for two. */
AVX2 static void matmul_q8_avx2(const bfk_matrix *w, const uint8_t *qx, size_t ldq, int m_count, float *out, int ldo,
                                int n0, int n1, int add) {
    int vnni = w->type == BFK_Q8_0 || w->type == BFK_Q4_0 ? bfk_uses_vnni() : 0;
    for (int nb = n0; nb < n1; nb += 16) {
        int ne = nb + 16 < n1 ? nb + 16 : n1;
        for (int m0 = 0; m0 < m_count; m0 += Q8_MAX_MT) {
            int mt = m_count - m0 < Q8_MAX_MT ? m_count - m0 : Q8_MAX_MT;
            int most = mt == 1 ? 4 : mt == 2 ? 2 : 1;
            for (int n = nb; n < ne;) {
                int nt = ne - n < most ? ne - n : most;
                if (vnni == BFK_VNNI_AVX) {
                    tile_vnni(w, qx + (size_t) m0 * ldq, ldq, out + (size_t) m0 * ldo, ldo, n, add, mt, nt);
                } else if (vnni == BFK_VNNI_AVX512) {
                    tile_vnni512(w, qx + (size_t) m0 * ldq, ldq, out + (size_t) m0 * ldo, ldo, n, add, mt, nt);
                } else {
                    tile_q8_avx2(w, qx + (size_t) m0 * ldq, ldq, out + (size_t) m0 * ldo, ldo, n, add, mt, nt);
                }
                n += nt;
            }
        }
    }
}

#endif /* BFK_X86 */

void bfk_matmul_q8_range(const bfk_matrix *w, const uint8_t *qx, size_t ldq, int m_count, float *out, int ldo, int n0,
                         int n1, int add) {
    if (w->interleaved) {
        bfk_x8_matmul_range(w, qx, ldq, m_count, out, ldo, n0, n1, add);
        return;
    }
#if BFK_X86
    if (bfk_uses_avx2()) {
        matmul_q8_avx2(w, qx, ldq, m_count, out, ldo, n0, n1, add);
        return;
    }
#endif
    for (int n = n0; n < n1; n++) {
        for (int m = 0; m < m_count; m++) {
            float r = dot_q8_portable(w, n, qx + (size_t) m * ldq);
            float *o = out + (size_t) m * ldo + n;
            *o = add ? *o + r : r;
        }
    }
}
