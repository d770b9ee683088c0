/*
 * Q8_0 and Q4_0 matrices with their rows interleaved eight at a time, for the products with 8-bit activations
 * (bfk_q8.c states their math; this layout computes the same integer sums, so the same bits).
 *
 * Why: in ggml's layout a row's block gives one output, so a kernel spreads one block over a vector's 8 lanes and
 * must then sum them across the vector and scale them one row at a time: about ten instructions a block. With eight
 * rows interleaved, lane k of every vector belongs to row k: an integer multiply-add takes four values of each of
 * the eight rows against four activations broadcast to every lane, the eight block sums come out in one vector, and
 * their eight scales are converted and applied at once: about four instructions a block. llama.cpp repacks Q4_0 and
 * Q8_0 the same way for the same reason (its "8x8" layouts). A stage repacks its own copy when it loads (the shards
 * keep ggml's layout); nothing is quantized again.
 *
 * The layout, for a matrix whose rows are a multiple of 8: group g holds rows 8g..8g+7 in the bytes of those rows
 * (8 * row_bytes), block after block; a group's block b takes 8 times a block's bytes:
 *   - the 8 rows' scales (fp16), row 0 first: 16 bytes;
 *   - chunks of 32 bytes, chunk j's 4 bytes at 4k being row k's quant bytes 4j..4j+3: Q8_0 8 chunks (values
 *     4j..4j+3), Q4_0 4 chunks (bytes 4j..4j+3 of ggml's 16, whose low nibbles are values 4j..4j+3 and high nibbles
 *     values 16+4j..16+4j+3).
 * Q6_K (rows a multiple of 8, super-blocks of 256 values): a group's super-block takes 8 * 210 bytes: the 8 rows' d
 * (fp16, 16 bytes), their 16 sub-block scales (byte 8u + k: sub-block u of row k, 128 bytes), then for each block of
 * 32 values 192 bytes: 4 chunks of nibbles as Q4_0's (the low 4 bits of values 4j+b and 16+4j+b at byte 4k+b of
 * chunk j) and two vectors of the high 2 bits, byte 4k+b holding in bits 2j..2j+1 those of value 4j+b (the first)
 * and of value 16+4j+b (the second), j = 0..3.
 * Q4_K (rows a multiple of 8, super-blocks of 256 values): a group's super-block takes 8 * 144 bytes: the 8 rows' d
 * (fp16, 16 bytes), their dmin (16 bytes), the low 4 bits of each sub-block's scale and min (byte 8u + k: sub-block u
 * of row k, scale in the low nibble, min in the high; 64 bytes), their high 2 bits (the 32-bit word u, bits 4k..4k+3:
 * the scale's two then the min's two; 32 bytes), then for each pair p of sub-blocks 8 chunks of 32 bytes, chunk j's
 * byte 4k+b being row k's ggml quant byte 32p + 4j + b (low nibble: value 4j+b of sub-block 2p, high nibble: of
 * sub-block 2p+1).
 */
#include "bfk_inline.h"

#include <stdlib.h>

int bfk_x8_applies(const bfk_matrix *w) {
    int block = w->type == BFK_Q6_K || w->type == BFK_Q4_K ? 256 : 32;
    return (w->type == BFK_Q8_0 || w->type == BFK_Q4_0 || w->type == BFK_Q6_K || w->type == BFK_Q4_K) && w->rows > 0
           && w->rows % 8 == 0 && w->cols % block == 0;
}

static void interleave_q4_k(const bfk_matrix *w, uint8_t *out) {
    for (int g = 0; g < w->rows / 8; g++) {
        for (int sb = 0; sb < w->cols / 256; sb++) {
            uint8_t *dst = out + (size_t) g * 8 * w->row_bytes + (size_t) sb * 8 * 144;
            memset(dst, 0, 8 * 144);
            for (int k = 0; k < 8; k++) {
                const uint8_t *src = w->data + (size_t) (8 * g + k) * w->row_bytes + (size_t) sb * 144;
                memcpy(dst + 2 * k, src, 2);
                memcpy(dst + 16 + 2 * k, src + 2, 2);
                for (int u = 0; u < 8; u++) {
                    int sc, m;
                    scale_min_k4(u, src + 4, &sc, &m);
                    dst[32 + 8 * u + k] = (uint8_t) ((sc & 0x0F) | ((m & 0x0F) << 4));
                    dst[96 + 4 * u + k / 2] |= (uint8_t) (((sc >> 4) | ((m >> 4) << 2)) << (4 * (k % 2)));
                }
                for (int p = 0; p < 4; p++) {
                    for (int j = 0; j < 8; j++) {
                        memcpy(dst + 128 + 256 * p + 32 * j + 4 * k, src + 16 + 32 * p + 4 * j, 4);
                    }
                }
            }
        }
    }
}

/* Row k's scale and min of sub-block u of a group's Q4_K super-block in the interleaved layout. */
static void x8_q4_k_scale_min(const uint8_t *gsb, int k, int u, int *sc, int *m) {
    int high = (gsb[96 + 4 * u + k / 2] >> (4 * (k % 2))) & 0x0F;
    *sc = (gsb[32 + 8 * u + k] & 0x0F) | ((high & 3) << 4);
    *m = (gsb[32 + 8 * u + k] >> 4) | ((high >> 2) << 4);
}

/* Row k's value i (0-31) of sub-block u of a group's Q4_K super-block in the interleaved layout. */
static int x8_q4_k_value(const uint8_t *gsb, int k, int u, int i) {
    uint8_t byte = gsb[128 + 256 * (u / 2) + 32 * (i / 4) + 4 * k + i % 4];
    return u % 2 ? byte >> 4 : byte & 0x0F;
}

/* Q6_K's value i (0-31) of block s (0-7) of a super-block in ggml's layout, unsigned (0-63: the value plus 32). */
static int q6_value(const uint8_t *blk, int s, int i) {
    int c = s / 4, k = s % 4;
    uint8_t l = blk[64 * c + 32 * (k & 1) + i], h = blk[128 + 32 * c + i];
    return (k >= 2 ? l >> 4 : l & 0x0F) | (((h >> (2 * k)) & 3) << 4);
}

static void interleave_q6_k(const bfk_matrix *w, uint8_t *out) {
    for (int g = 0; g < w->rows / 8; g++) {
        for (int sb = 0; sb < w->cols / 256; sb++) {
            uint8_t *dst = out + (size_t) g * 8 * w->row_bytes + (size_t) sb * 8 * 210;
            memset(dst, 0, 8 * 210);
            for (int k = 0; k < 8; k++) {
                const uint8_t *src = w->data + (size_t) (8 * g + k) * w->row_bytes + (size_t) sb * 210;
                dst[2 * k] = src[208];
                dst[2 * k + 1] = src[209];
                for (int u = 0; u < 16; u++) {
                    dst[16 + 8 * u + k] = src[192 + u];
                }
                for (int s = 0; s < 8; s++) {
                    uint8_t *base = dst + 144 + 192 * s;
                    for (int i = 0; i < 32; i++) {
                        int v = q6_value(src, s, i), half = i / 16, j = (i % 16) / 4, b = i % 4;
                        base[32 * j + 4 * k + b] |= (uint8_t) ((v & 0x0F) << (4 * half));
                        base[128 + 32 * half + 4 * k + b] |= (uint8_t) ((v >> 4) << (2 * j));
                    }
                }
            }
        }
    }
}

/* Row k's value i (0-31, unsigned) of block s of a group's super-block in the interleaved layout. */
static int x8_q6_value(const uint8_t *gsb, int k, int s, int i) {
    const uint8_t *base = gsb + 144 + 192 * s;
    int half = i / 16, j = (i % 16) / 4, b = i % 4;
    int low = (base[32 * j + 4 * k + b] >> (4 * half)) & 0x0F;
    int high = (base[128 + 32 * half + 4 * k + b] >> (2 * j)) & 3;
    return low | (high << 4);
}

static int block_bytes(int type) {
    return type == BFK_Q8_0 ? 34 : 18;
}

void bfk_x8_interleave(const bfk_matrix *w, uint8_t *out) {
    if (w->type == BFK_Q6_K) {
        interleave_q6_k(w, out);
        return;
    }
    if (w->type == BFK_Q4_K) {
        interleave_q4_k(w, out);
        return;
    }
    int bb = block_bytes(w->type), quant = bb - 2, blocks = w->cols / 32;
    for (int g = 0; g < w->rows / 8; g++) {
        for (int b = 0; b < blocks; b++) {
            uint8_t *dst = out + (size_t) g * 8 * w->row_bytes + (size_t) b * 8 * bb;
            for (int k = 0; k < 8; k++) {
                const uint8_t *src = w->data + (size_t) (8 * g + k) * w->row_bytes + (size_t) b * bb;
                dst[2 * k] = src[0];
                dst[2 * k + 1] = src[1];
                for (int j = 0; j < quant / 4; j++) {
                    memcpy(dst + 16 + 32 * j + 4 * k, src + 2 + 4 * j, 4);
                }
            }
        }
    }
}

/* Row k of group block `gb`: its 32 values as ints and its scale. */
static float x8_block(int type, const uint8_t *gb, int k, int v[32]) {
    for (int i = 0; i < 32; i++) {
        int j = (i & 15) / 4, at = 16 + 32 * j + 4 * k + (i & 3);
        if (type == BFK_Q8_0) {
            v[i] = (int8_t) gb[16 + 32 * (i / 4) + 4 * k + (i & 3)];
        } else {
            v[i] = (i < 16 ? gb[at] & 0x0F : gb[at] >> 4) - 8;
        }
    }
    return read_half(gb + 2 * k);
}

void bfk_x8_dequantize_row(const bfk_matrix *w, int row, float *out) {
    if (w->type == BFK_Q4_K) {
        const uint8_t *group = w->data + (size_t) (row / 8) * 8 * w->row_bytes;
        int k = row % 8;
        for (int sb = 0; sb < w->cols / 256; sb++) {
            const uint8_t *gsb = group + (size_t) sb * 8 * 144;
            float d = read_half(gsb + 2 * k), dmin = read_half(gsb + 16 + 2 * k);
            for (int u = 0; u < 8; u++) {
                int sc, m;
                x8_q4_k_scale_min(gsb, k, u, &sc, &m);
                float d1 = d * (float) sc, m1 = dmin * (float) m; /* as ggml's dequantize_row_q4_K */
                for (int i = 0; i < 32; i++) {
                    out[256 * sb + 32 * u + i] = d1 * (float) x8_q4_k_value(gsb, k, u, i) - m1;
                }
            }
        }
        return;
    }
    if (w->type == BFK_Q6_K) {
        const uint8_t *group = w->data + (size_t) (row / 8) * 8 * w->row_bytes;
        int k = row % 8;
        for (int sb = 0; sb < w->cols / 256; sb++) {
            const uint8_t *gsb = group + (size_t) sb * 8 * 210;
            float d = read_half(gsb + 2 * k);
            for (int i = 0; i < 256; i++) {
                int sc = (int8_t) gsb[16 + 8 * (i / 16) + k];
                out[256 * sb + i] = d * (float) sc * (float) (x8_q6_value(gsb, k, i / 32, i % 32) - 32);
            }
        }
        return;
    }
    int bb = block_bytes(w->type), v[32];
    const uint8_t *group = w->data + (size_t) (row / 8) * 8 * w->row_bytes;
    for (int b = 0; b < w->cols / 32; b++) {
        float d = x8_block(w->type, group + (size_t) b * 8 * bb, row % 8, v);
        for (int i = 0; i < 32; i++) {
            out[32 * b + i] = (float) v[i] * d;
        }
    }
}

/* Row k's block of 32 (block s of super-block gsb) times activations a: sc * (sum of each half's products). */
static int x8_q6_block_sum(const uint8_t *gsb, int k, int s, const int8_t *a) {
    int sum = 0;
    for (int half = 0; half < 2; half++) {
        int part = 0;
        for (int i = 16 * half; i < 16 * half + 16; i++) {
            part += (x8_q6_value(gsb, k, s, i) - 32) * a[i];
        }
        sum += (int8_t) gsb[16 + 8 * (2 * s + half) + k] * part;
    }
    return sum;
}

static void matmul_x8_portable(const bfk_matrix *w, const uint8_t *qx, size_t ldq, int m_count, float *out, int ldo,
                               int n0, int n1, int add) {
    if (w->type == BFK_Q4_K) {
        for (int n = n0; n < n1; n++) {
            const uint8_t *group = w->data + (size_t) (n / 8) * 8 * w->row_bytes;
            int k = n % 8;
            for (int m = 0; m < m_count; m++) {
                const int8_t *a = (const int8_t *) (qx + (size_t) m * ldq);
                const float *ad = (const float *) (qx + (size_t) m * ldq + w->cols);
                float acc = 0.0f, mins = 0.0f;
                for (int sb = 0; sb < w->cols / 256; sb++) {
                    const uint8_t *gsb = group + (size_t) sb * 8 * 144;
                    float d = read_half(gsb + 2 * k), dmin = read_half(gsb + 16 + 2 * k);
                    for (int u = 0; u < 8; u++) {
                        int blk = 8 * sb + u, sc, mn, dot = 0, sum = 0;
                        x8_q4_k_scale_min(gsb, k, u, &sc, &mn);
                        for (int i = 0; i < 32; i++) {
                            dot += x8_q4_k_value(gsb, k, u, i) * a[32 * blk + i];
                            sum += a[32 * blk + i];
                        }
                        acc = fmaf((float) dot, (d * (float) sc) * ad[blk], acc);
                        mins = fmaf((float) sum, (dmin * (float) mn) * ad[blk], mins);
                    }
                }
                float r = acc - mins, *o = out + (size_t) m * ldo + n;
                *o = add ? *o + r : r;
            }
        }
        return;
    }
    if (w->type == BFK_Q6_K) {
        for (int n = n0; n < n1; n++) {
            const uint8_t *group = w->data + (size_t) (n / 8) * 8 * w->row_bytes;
            for (int m = 0; m < m_count; m++) {
                const int8_t *a = (const int8_t *) (qx + (size_t) m * ldq);
                const float *ad = (const float *) (qx + (size_t) m * ldq + w->cols);
                float acc = 0.0f;
                for (int sb = 0; sb < w->cols / 256; sb++) {
                    const uint8_t *gsb = group + (size_t) sb * 8 * 210;
                    float d = read_half(gsb + 2 * (n % 8));
                    for (int s = 0; s < 8; s++) {
                        int blk = 8 * sb + s;
                        acc = fmaf((float) x8_q6_block_sum(gsb, n % 8, s, a + 32 * blk), d * ad[blk], acc);
                    }
                }
                float *o = out + (size_t) m * ldo + n;
                *o = add ? *o + acc : acc;
            }
        }
        return;
    }
    int bb = block_bytes(w->type), v[32];
    for (int n = n0; n < n1; n++) {
        const uint8_t *group = w->data + (size_t) (n / 8) * 8 * w->row_bytes;
        for (int m = 0; m < m_count; m++) {
            const int8_t *a = (const int8_t *) (qx + (size_t) m * ldq);
            const float *ad = (const float *) (qx + (size_t) m * ldq + w->cols);
            float acc = 0.0f;
            for (int b = 0; b < w->cols / 32; b++) {
                float dw = x8_block(w->type, group + (size_t) b * 8 * bb, n % 8, v);
                int sum = 0;
                for (int i = 0; i < 32; i++) {
                    sum += v[i] * a[32 * b + i];
                }
                acc = fmaf((float) sum, dw * ad[b], acc);
            }
            float *o = out + (size_t) m * ldo + n;
            *o = add ? *o + acc : acc;
        }
    }
}

#if BFK_X86

#define X8_MAX 4

/* Four activations broadcast to every lane. */
AVX2 static INLINE __m256i quad(const int8_t *a) {
    int32_t q;
    memcpy(&q, a, 4);
    return _mm256_set1_epi32(q);
}

/* The tile's G groups (8G rows from group g0) against MT activation rows, one block at a time. OP(acc, w, a) adds
   to each lane the four products of its weights and activations; Q4_0's nibbles are 0..15, and its tiles take
   8 * (sum of the block's activations) off, as Q8_0's VNNI tiles take 128 * it off their weights made unsigned. */
#define X8_TILE(NAME, ATTR, TYPE_Q8, OP, W8) \
ATTR static INLINE void NAME(const bfk_matrix *w, const uint8_t *qx, size_t ldq, float *out, int ldo, int g0, int add, \
                             const int G, const int MT) { \
    const int bb = TYPE_Q8 ? 34 : 18, blocks = w->cols / 32; \
    const size_t group_bytes = 8 * w->row_bytes; \
    __m256 acc[X8_MAX][X8_MAX]; \
    for (int g = 0; g < X8_MAX; g++) for (int i = 0; i < X8_MAX; i++) acc[g][i] = _mm256_setzero_ps(); \
    const uint8_t *base = w->data + (size_t) g0 * group_bytes; \
    const __m256i low = _mm256_set1_epi8(0x0F); \
    (void) low; \
    for (int b = 0; b < blocks; b++) { \
        for (int g = 0; g < G; g++) { \
            const char *ahead = (const char *) base + (size_t) (G + g) * group_bytes + (size_t) b * 8 * bb; \
            for (int off = 0; off < 8 * bb; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0); \
        } \
        __m256i isum[X8_MAX][X8_MAX]; \
        for (int i = 0; i < MT; i++) { \
            const int32_t *halves = (const int32_t *) (qx + (size_t) i * ldq + w->cols + w->cols / 8); \
            __m256i start = _mm256_set1_epi32(-(W8) * (halves[2 * b] + halves[2 * b + 1])); \
            for (int g = 0; g < G; g++) isum[g][i] = start; \
        } \
        if (TYPE_Q8) { \
            for (int j = 0; j < 8; j++) { \
                __m256i a[X8_MAX]; \
                for (int i = 0; i < MT; i++) a[i] = quad((const int8_t *) qx + (size_t) i * ldq + 32 * b + 4 * j); \
                for (int g = 0; g < G; g++) { \
                    const uint8_t *gb = base + (size_t) g * group_bytes + (size_t) b * 8 * bb; \
                    __m256i wv = _mm256_loadu_si256((const __m256i *) (gb + 16 + 32 * j)); \
                    for (int i = 0; i < MT; i++) isum[g][i] = OP(isum[g][i], wv, a[i]); \
                } \
            } \
        } else { \
            for (int j = 0; j < 4; j++) { \
                __m256i lo[X8_MAX], hi[X8_MAX]; \
                for (int i = 0; i < MT; i++) { \
                    lo[i] = quad((const int8_t *) qx + (size_t) i * ldq + 32 * b + 4 * j); \
                    hi[i] = quad((const int8_t *) qx + (size_t) i * ldq + 32 * b + 16 + 4 * j); \
                } \
                for (int g = 0; g < G; g++) { \
                    const uint8_t *gb = base + (size_t) g * group_bytes + (size_t) b * 8 * bb; \
                    __m256i raw = _mm256_loadu_si256((const __m256i *) (gb + 16 + 32 * j)); \
                    __m256i wl = _mm256_and_si256(raw, low), wh = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low); \
                    for (int i = 0; i < MT; i++) { \
                        isum[g][i] = OP(isum[g][i], wl, lo[i]); \
                        isum[g][i] = OP(isum[g][i], wh, hi[i]); \
                    } \
                } \
            } \
        } \
        for (int g = 0; g < G; g++) { \
            const uint8_t *gb = base + (size_t) g * group_bytes + (size_t) b * 8 * bb; \
            __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) gb)); \
            for (int i = 0; i < MT; i++) { \
                const float *ad = (const float *) (qx + (size_t) i * ldq + w->cols); \
                acc[g][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[g][i]), \
                                            _mm256_mul_ps(dw, _mm256_broadcast_ss(ad + b)), acc[g][i]); \
            } \
        } \
    } \
    for (int g = 0; g < G; g++) for (int i = 0; i < MT; i++) { \
        float *o = out + (size_t) i * ldo + 8 * (g0 + g); \
        __m256 r = add ? _mm256_add_ps(_mm256_loadu_ps(o), acc[g][i]) : acc[g][i]; \
        _mm256_storeu_ps(o, r); \
    } \
}

/* AVX2: signed Q8_0 weights through the sign trick (|w| <= 128 and |a| <= 127 keep each pair of products within
   maddubs' int16); Q4_0's nibbles are unsigned already. */
AVX2 static INLINE __m256i op_q8_avx2(__m256i acc, __m256i w, __m256i a) {
    __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

AVX2 static INLINE __m256i op_q4_avx2(__m256i acc, __m256i w, __m256i a) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)));
}

/* AVX-VNNI: vpdpbusd, unsigned weights by signed activations; Q8_0's made unsigned by flipping their sign bit. */
VNNI static INLINE __m256i op_q8_vnni(__m256i acc, __m256i w, __m256i a) {
    return _mm256_dpbusd_avx_epi32(acc, _mm256_xor_si256(w, _mm256_set1_epi8((char) 0x80)), a);
}

VNNI static INLINE __m256i op_q4_vnni(__m256i acc, __m256i w, __m256i a) {
    return _mm256_dpbusd_avx_epi32(acc, w, a);
}

VNNI512 static INLINE __m256i op_q8_vnni512(__m256i acc, __m256i w, __m256i a) {
    return _mm256_dpbusd_epi32(acc, _mm256_xor_si256(w, _mm256_set1_epi8((char) 0x80)), a);
}

VNNI512 static INLINE __m256i op_q4_vnni512(__m256i acc, __m256i w, __m256i a) {
    return _mm256_dpbusd_epi32(acc, w, a);
}

X8_TILE(tile_q8_0_avx2, AVX2, 1, op_q8_avx2, 0)
X8_TILE(tile_q4_0_avx2, AVX2, 0, op_q4_avx2, 8)
X8_TILE(tile_q8_0_vnni, VNNI, 1, op_q8_vnni, 128)
X8_TILE(tile_q4_0_vnni, VNNI, 0, op_q4_vnni, 8)
X8_TILE(tile_q8_0_vnni512, VNNI512, 1, op_q8_vnni512, 128)
X8_TILE(tile_q4_0_vnni512, VNNI512, 0, op_q4_vnni512, 8)

/* Q6_K: each half block's products, less 32 times its activations' sum, times the 8 rows' scales of that
   sub-block, the two added: the block's integer sum of every row in one vector, as for Q8_0. */
#define X8_Q6K_TILE(NAME, ATTR, OP) \
ATTR static INLINE void NAME(const bfk_matrix *w, const uint8_t *qx, size_t ldq, float *out, int ldo, int g0, int add, \
                             const int G, const int MT) { \
    const size_t group_bytes = 8 * w->row_bytes; \
    __m256 acc[X8_MAX][X8_MAX]; \
    for (int g = 0; g < X8_MAX; g++) for (int i = 0; i < X8_MAX; i++) acc[g][i] = _mm256_setzero_ps(); \
    const uint8_t *base = w->data + (size_t) g0 * group_bytes; \
    const __m256i low = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30); \
    for (int sb = 0; sb < w->cols / 256; sb++) { \
        __m256 d[X8_MAX]; \
        for (int g = 0; g < G; g++) { \
            d[g] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (base + (size_t) g * group_bytes + (size_t) sb * 1680))); \
        } \
        for (int s = 0; s < 8; s++) { \
            int blk = 8 * sb + s; \
            for (int g = 0; g < G; g++) { \
                const char *ahead = (const char *) base + (size_t) (G + g) * group_bytes + (size_t) sb * 1680 + 144 + 192 * s; \
                for (int off = 0; off < 192; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0); \
            } \
            __m256i lo_sum[X8_MAX][X8_MAX], hi_sum[X8_MAX][X8_MAX]; \
            for (int i = 0; i < MT; i++) { \
                const int32_t *halves = (const int32_t *) (qx + (size_t) i * ldq + w->cols + w->cols / 8); \
                __m256i s0 = _mm256_set1_epi32(-32 * halves[2 * blk]), s1 = _mm256_set1_epi32(-32 * halves[2 * blk + 1]); \
                for (int g = 0; g < G; g++) { lo_sum[g][i] = s0; hi_sum[g][i] = s1; } \
            } \
            __m256i ha[X8_MAX], hb[X8_MAX]; \
            for (int g = 0; g < G; g++) { \
                const uint8_t *gb = base + (size_t) g * group_bytes + (size_t) sb * 1680 + 144 + 192 * s; \
                ha[g] = _mm256_loadu_si256((const __m256i *) (gb + 128)); \
                hb[g] = _mm256_loadu_si256((const __m256i *) (gb + 160)); \
            } \
            for (int j = 0; j < 4; j++) { \
                __m256i al[X8_MAX], ah[X8_MAX]; \
                for (int i = 0; i < MT; i++) { \
                    al[i] = quad((const int8_t *) qx + (size_t) i * ldq + 32 * blk + 4 * j); \
                    ah[i] = quad((const int8_t *) qx + (size_t) i * ldq + 32 * blk + 16 + 4 * j); \
                } \
                for (int g = 0; g < G; g++) { \
                    const uint8_t *gb = base + (size_t) g * group_bytes + (size_t) sb * 1680 + 144 + 192 * s; \
                    __m256i raw = _mm256_loadu_si256((const __m256i *) (gb + 32 * j)); \
                    __m256i xa = j == 0 ? _mm256_slli_epi16(ha[g], 4) : j == 1 ? _mm256_slli_epi16(ha[g], 2) \
                                 : j == 2 ? ha[g] : _mm256_srli_epi16(ha[g], 2); \
                    __m256i xb = j == 0 ? _mm256_slli_epi16(hb[g], 4) : j == 1 ? _mm256_slli_epi16(hb[g], 2) \
                                 : j == 2 ? hb[g] : _mm256_srli_epi16(hb[g], 2); \
                    __m256i wl = _mm256_or_si256(_mm256_and_si256(raw, low), _mm256_and_si256(xa, top)); \
                    __m256i wh = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low), _mm256_and_si256(xb, top)); \
                    for (int i = 0; i < MT; i++) { \
                        lo_sum[g][i] = OP(lo_sum[g][i], wl, al[i]); \
                        hi_sum[g][i] = OP(hi_sum[g][i], wh, ah[i]); \
                    } \
                } \
            } \
            for (int g = 0; g < G; g++) { \
                const uint8_t *scales = base + (size_t) g * group_bytes + (size_t) sb * 1680 + 16 + 8 * (2 * s); \
                __m256i sc0 = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *) scales)); \
                __m256i sc1 = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *) (scales + 8))); \
                for (int i = 0; i < MT; i++) { \
                    const float *ad = (const float *) (qx + (size_t) i * ldq + w->cols); \
                    __m256i sum = _mm256_add_epi32(_mm256_mullo_epi32(lo_sum[g][i], sc0), \
                                                   _mm256_mullo_epi32(hi_sum[g][i], sc1)); \
                    acc[g][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), \
                                                _mm256_mul_ps(d[g], _mm256_broadcast_ss(ad + blk)), acc[g][i]); \
                } \
            } \
        } \
    } \
    for (int g = 0; g < G; g++) for (int i = 0; i < MT; i++) { \
        float *o = out + (size_t) i * ldo + 8 * (g0 + g); \
        __m256 r = add ? _mm256_add_ps(_mm256_loadu_ps(o), acc[g][i]) : acc[g][i]; \
        _mm256_storeu_ps(o, r); \
    } \
}

X8_Q6K_TILE(tile_q6_k_avx2, AVX2, op_q4_avx2)
X8_Q6K_TILE(tile_q6_k_vnni, VNNI, op_q4_vnni)
X8_Q6K_TILE(tile_q6_k_vnni512, VNNI512, op_q4_vnni512)

/* Q4_K: each block's products of the 8 rows' unsigned values (one vector of integer sums) by d * scale * da, and
   the activations' block sum by dmin * min * da, into two accumulators; the result their difference. */
#define X8_Q4K_TILE(NAME, ATTR, OP) \
ATTR static INLINE void NAME(const bfk_matrix *w, const uint8_t *qx, size_t ldq, float *out, int ldo, int g0, int add, \
                             const int G, const int MT) { \
    const size_t group_bytes = 8 * w->row_bytes; \
    __m256 acc[X8_MAX][X8_MAX], mac[X8_MAX][X8_MAX]; \
    for (int g = 0; g < X8_MAX; g++) for (int i = 0; i < X8_MAX; i++) acc[g][i] = mac[g][i] = _mm256_setzero_ps(); \
    const uint8_t *base = w->data + (size_t) g0 * group_bytes; \
    const __m256i low = _mm256_set1_epi8(0x0F), low32 = _mm256_set1_epi32(0x0F), three = _mm256_set1_epi32(3); \
    const __m256i nibble_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28); \
    for (int sb = 0; sb < w->cols / 256; sb++) { \
        __m256 d[X8_MAX], dmin[X8_MAX]; \
        for (int g = 0; g < G; g++) { \
            const uint8_t *gsb = base + (size_t) g * group_bytes + (size_t) sb * 1152; \
            d[g] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) gsb)); \
            dmin[g] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (gsb + 16))); \
        } \
        for (int p = 0; p < 4; p++) { \
            for (int g = 0; g < G; g++) { \
                const char *ahead = (const char *) base + (size_t) (G + g) * group_bytes + (size_t) sb * 1152 + 128 + 256 * p; \
                for (int off = 0; off < 256; off += 64) _mm_prefetch(ahead + off, _MM_HINT_T0); \
            } \
            int b0 = 8 * sb + 2 * p; \
            __m256i lo_sum[X8_MAX][X8_MAX], hi_sum[X8_MAX][X8_MAX]; \
            for (int g = 0; g < G; g++) for (int i = 0; i < MT; i++) lo_sum[g][i] = hi_sum[g][i] = _mm256_setzero_si256(); \
            for (int j = 0; j < 8; j++) { \
                __m256i al[X8_MAX], ah[X8_MAX]; \
                for (int i = 0; i < MT; i++) { \
                    al[i] = quad((const int8_t *) qx + (size_t) i * ldq + 32 * b0 + 4 * j); \
                    ah[i] = quad((const int8_t *) qx + (size_t) i * ldq + 32 * (b0 + 1) + 4 * j); \
                } \
                for (int g = 0; g < G; g++) { \
                    const uint8_t *gsb = base + (size_t) g * group_bytes + (size_t) sb * 1152; \
                    __m256i raw = _mm256_loadu_si256((const __m256i *) (gsb + 128 + 256 * p + 32 * j)); \
                    __m256i wl = _mm256_and_si256(raw, low), wh = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low); \
                    for (int i = 0; i < MT; i++) { \
                        lo_sum[g][i] = OP(lo_sum[g][i], wl, al[i]); \
                        hi_sum[g][i] = OP(hi_sum[g][i], wh, ah[i]); \
                    } \
                } \
            } \
            for (int g = 0; g < G; g++) { \
                const uint8_t *gsb = base + (size_t) g * group_bytes + (size_t) sb * 1152; \
                for (int h = 0; h < 2; h++) { \
                    int u = 2 * p + h, blk = b0 + h; \
                    __m256i lows = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *) (gsb + 32 + 8 * u))); \
                    int32_t word; \
                    memcpy(&word, gsb + 96 + 4 * u, 4); \
                    __m256i highs = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(word), nibble_shift), low32); \
                    __m256i sc = _mm256_or_si256(_mm256_and_si256(lows, low32), \
                                                 _mm256_slli_epi32(_mm256_and_si256(highs, three), 4)); \
                    __m256i mn = _mm256_or_si256(_mm256_srli_epi32(lows, 4), _mm256_slli_epi32(_mm256_srli_epi32(highs, 2), 4)); \
                    __m256 dsc = _mm256_mul_ps(d[g], _mm256_cvtepi32_ps(sc)); \
                    __m256 dm = _mm256_mul_ps(dmin[g], _mm256_cvtepi32_ps(mn)); \
                    for (int i = 0; i < MT; i++) { \
                        const float *ad = (const float *) (qx + (size_t) i * ldq + w->cols); \
                        const int32_t *halves = (const int32_t *) (qx + (size_t) i * ldq + w->cols + w->cols / 8); \
                        __m256 da = _mm256_broadcast_ss(ad + blk); \
                        __m256 sum = _mm256_set1_ps((float) (halves[2 * blk] + halves[2 * blk + 1])); \
                        __m256i dots = h ? hi_sum[g][i] : lo_sum[g][i]; \
                        acc[g][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_mul_ps(dsc, da), acc[g][i]); \
                        mac[g][i] = _mm256_fmadd_ps(sum, _mm256_mul_ps(dm, da), mac[g][i]); \
                    } \
                } \
            } \
        } \
    } \
    for (int g = 0; g < G; g++) for (int i = 0; i < MT; i++) { \
        float *o = out + (size_t) i * ldo + 8 * (g0 + g); \
        __m256 r = _mm256_sub_ps(acc[g][i], mac[g][i]); \
        if (add) r = _mm256_add_ps(_mm256_loadu_ps(o), r); \
        _mm256_storeu_ps(o, r); \
    } \
}

X8_Q4K_TILE(tile_q4_k_avx2, AVX2, op_q4_avx2)
X8_Q4K_TILE(tile_q4_k_vnni, VNNI, op_q4_vnni)
X8_Q4K_TILE(tile_q4_k_vnni512, VNNI512, op_q4_vnni512)

#define X8_CASES(TILE) \
    switch (mt * 8 + gt) { \
        case 9: TILE(w, qx, ldq, out, ldo, g0, add, 1, 1); break; \
        case 10: TILE(w, qx, ldq, out, ldo, g0, add, 2, 1); break; \
        case 11: TILE(w, qx, ldq, out, ldo, g0, add, 3, 1); break; \
        case 12: TILE(w, qx, ldq, out, ldo, g0, add, 4, 1); break; \
        case 17: TILE(w, qx, ldq, out, ldo, g0, add, 1, 2); break; \
        case 18: TILE(w, qx, ldq, out, ldo, g0, add, 2, 2); break; \
        case 25: TILE(w, qx, ldq, out, ldo, g0, add, 1, 3); break; \
        case 33: TILE(w, qx, ldq, out, ldo, g0, add, 1, 4); break; \
        default: break; \
    }

/* A tile of interleaved products, one function per instruction set (maddubs, or one of vpdpbusd's encodings). */
#define X8_TILES(SUFFIX, ATTR) \
ATTR static void tile_x8_##SUFFIX(const bfk_matrix *w, const uint8_t *qx, size_t ldq, float *out, int ldo, int g0, \
                                  int add, int mt, int gt) { \
    if (w->type == BFK_Q8_0) { \
        X8_CASES(tile_q8_0_##SUFFIX) \
    } else if (w->type == BFK_Q6_K) { \
        X8_CASES(tile_q6_k_##SUFFIX) \
    } else if (w->type == BFK_Q4_K) { \
        X8_CASES(tile_q4_k_##SUFFIX) \
    } else { \
        X8_CASES(tile_q4_0_##SUFFIX) \
    } \
}

X8_TILES(avx2, AVX2)
X8_TILES(vnni, VNNI)
X8_TILES(vnni512, VNNI512)

/* Groups four at a time for one activation row (a decode step's), two for two, one for three or four. */
static void matmul_x8_x86(const bfk_matrix *w, const uint8_t *qx, size_t ldq, int m_count, float *out, int ldo,
                          int g0, int g1, int add) {
    int vnni = bfk_uses_vnni();
    for (int m0 = 0; m0 < m_count; m0 += X8_MAX) {
        int mt = m_count - m0 < X8_MAX ? m_count - m0 : X8_MAX;
        /* Q4_K's tiles keep two accumulators a row and group: four groups would not fit the 16 vector registers */
        int most = mt == 1 ? (w->type == BFK_Q4_K || w->type == BFK_Q6_K ? 2 : 4) : mt == 2 ? 2 : 1;
        for (int g = g0; g < g1;) {
            int gt = g1 - g < most ? g1 - g : most;
            if (vnni == BFK_VNNI_AVX) {
                tile_x8_vnni(w, qx + (size_t) m0 * ldq, ldq, out + (size_t) m0 * ldo, ldo, g, add, mt, gt);
            } else if (vnni == BFK_VNNI_AVX512) {
                tile_x8_vnni512(w, qx + (size_t) m0 * ldq, ldq, out + (size_t) m0 * ldo, ldo, g, add, mt, gt);
            } else {
                tile_x8_avx2(w, qx + (size_t) m0 * ldq, ldq, out + (size_t) m0 * ldo, ldo, g, add, mt, gt);
            }
            g += gt;
        }
    }
}

#endif /* BFK_X86 */

void bfk_x8_matmul_range(const bfk_matrix *w, const uint8_t *qx, size_t ldq, int m_count, float *out, int ldo, int n0,
                         int n1, int add) {
#if BFK_X86
    if (bfk_uses_avx2() && n0 % 8 == 0 && n1 % 8 == 0) {
        matmul_x8_x86(w, qx, ldq, m_count, out, ldo, n0 / 8, n1 / 8, add);
        return;
    }
#endif
    matmul_x8_portable(w, qx, ldq, m_count, out, ldo, n0, n1, add);
}
