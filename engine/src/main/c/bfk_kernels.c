/*
 * Matrix products and elementwise operations, in two implementations that give the same bits: AVX2 (with FMA and
 * F16C), used when the CPU has it, and portable C that spells out the same 8 lanes.
 *
 * The order, for an output (row m, column n) of a product with a matrix of ggml blocks:
 *   - a block of 32 values is 4 groups of 8; lane j of the block's dot is
 *       bd[j] = w[j]*x[j], then bd[j] = fma(w[8g+j], x[8g+j], bd[j]) for g = 1, 2, 3
 *     (Q6_K's blocks of 16 are 2 groups), and it joins the accumulator as acc[j] = fma(bd[j], scale, acc[j]);
 *   - Q4_K's minimums: mac[j] = fma(xs[j], min, mac[j]) with xs[j] = ((x[j] + x[8+j]) + x[16+j]) + x[24+j] of the
 *     sub-block, and the result is hsum(acc) - hsum(mac);
 *   - F32, F16, BF16 rows: acc[j] = fma(w[8g+j], x[8g+j], acc[j]) for every group g in order, from zero;
 *   - hsum(v) = ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)), the tree of a 256-bit vector's halving adds;
 *   - with `add`, the result is out + hsum(...), as a residual connection adds a finished product.
 * Weights' values are exactly ggml's dequantized ones (d * q, (q - 8) * d, d*sc*q - dmin*m, d*sc*(q - 32)),
 * applied by block scale after the block's dot, so a product equals the float32 product with the dequantized matrix
 * up to the order of the additions.
 */
#include "bfk_inline.h"

static int use_avx2 = -1;
static int forced_portable = 0;

int bfk_has_avx2(void) {
#if BFK_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
    return 0;
#endif
}

int bfk_uses_avx2(void) {
    if (use_avx2 < 0) {
        use_avx2 = bfk_has_avx2();
    }
    return use_avx2 && !forced_portable;
}

void bfk_force_portable(int on) {
    forced_portable = on;
}

static int use_vnni = -1;
static int forced_without_vnni = 0;

int bfk_has_vnni(void) {
#if BFK_X86
    __builtin_cpu_init();
    if (!bfk_has_avx2()) {
        return 0;
    }
    if (__builtin_cpu_supports("avxvnni")) {
        return BFK_VNNI_AVX;
    }
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") ? BFK_VNNI_AVX512 : 0;
#else
    return 0;
#endif
}

int bfk_uses_vnni(void) {
    if (use_vnni < 0) {
        use_vnni = bfk_has_vnni();
    }
    return !forced_without_vnni && bfk_uses_avx2() ? use_vnni : 0;
}

void bfk_force_without_vnni(int on) {
    forced_without_vnni = on;
}

int bfk_type_supported(int type) {
    switch (type) {
        case BFK_F32: case BFK_F16: case BFK_BF16: case BFK_Q8_0: case BFK_Q4_0: case BFK_Q4_K: case BFK_Q6_K:
            return 1;
        default:
            return 0;
    }
}

size_t bfk_row_bytes(int type, int cols) {
    switch (type) {
        case BFK_F32: return (size_t) cols * 4;
        case BFK_F16: case BFK_BF16: return (size_t) cols * 2;
        case BFK_Q8_0: return (size_t) cols / 32 * 34;
        case BFK_Q4_0: return (size_t) cols / 32 * 18;
        case BFK_Q4_K: return (size_t) cols / 256 * 144;
        case BFK_Q6_K: return (size_t) cols / 256 * 210;
        default: return 0;
    }
}

/* ------------------------------------------------------------------ row sums for Q4_K */

int bfk_row_sums_floats(int type, int cols) {
    return type == BFK_Q4_K ? cols / 4 : 0;
}

void bfk_row_sums(int type, const float *x, int cols, float *sums) {
    if (type != BFK_Q4_K) {
        return;
    }
    for (int s = 0; s < cols / 32; s++) {
        const float *xs = x + 32 * s;
        for (int j = 0; j < 8; j++) {
            sums[8 * s + j] = ((xs[j] + xs[8 + j]) + xs[16 + j]) + xs[24 + j];
        }
    }
}

/* ------------------------------------------------------------------ portable products */

/* Lane j of a block's dot over `groups` groups of 8 decoded weights w[8g + j]. */
static inline void block_dot(const float *w, const float *x, int groups, float bd[8]) {
    for (int j = 0; j < 8; j++) {
        bd[j] = w[j] * x[j];
    }
    for (int g = 1; g < groups; g++) {
        for (int j = 0; j < 8; j++) {
            bd[j] = fmaf(w[8 * g + j], x[8 * g + j], bd[j]);
        }
    }
}

static float dot_portable(const bfk_matrix *w, int n, const float *x, const float *xsums) {
    const uint8_t *row = w->data + (size_t) n * w->row_bytes;
    float acc[8] = {0}, mac[8] = {0}, bd[8], v[32];
    int cols = w->cols;
    switch (w->type) {
        case BFK_F32: case BFK_F16: case BFK_BF16:
            for (int k = 0; k < cols; k += 8) {
                for (int j = 0; j < 8; j++) {
                    float wv = w->type == BFK_F32 ? ((const float *) row)[k + j]
                            : w->type == BFK_F16 ? half_to_float(read_u16(row + 2 * (k + j)))
                            : bf16_to_float(read_u16(row + 2 * (k + j)));
                    acc[j] = fmaf(wv, x[k + j], acc[j]);
                }
            }
            return hsum8(acc);
        case BFK_Q8_0:
            for (int b = 0; b < cols / 32; b++) {
                const uint8_t *blk = row + 34 * b;
                float d = read_half(blk);
                for (int i = 0; i < 32; i++) {
                    v[i] = (float) (int8_t) blk[2 + i];
                }
                block_dot(v, x + 32 * b, 4, bd);
                for (int j = 0; j < 8; j++) {
                    acc[j] = fmaf(bd[j], d, acc[j]);
                }
            }
            return hsum8(acc);
        case BFK_Q4_0:
            for (int b = 0; b < cols / 32; b++) {
                const uint8_t *blk = row + 18 * b;
                float d = read_half(blk);
                for (int i = 0; i < 16; i++) {
                    v[i] = (float) ((blk[2 + i] & 0x0F) - 8);
                    v[16 + i] = (float) ((blk[2 + i] >> 4) - 8);
                }
                block_dot(v, x + 32 * b, 4, bd);
                for (int j = 0; j < 8; j++) {
                    acc[j] = fmaf(bd[j], d, acc[j]);
                }
            }
            return hsum8(acc);
        case BFK_Q4_K:
            for (int b = 0; b < cols / 256; b++) {
                const uint8_t *blk = row + 144 * b;
                float d = read_half(blk), dmin = read_half(blk + 2);
                const uint8_t *scales = blk + 4, *qs = blk + 16;
                for (int s = 0; s < 8; s++) {
                    int sc, m;
                    scale_min_k4(s, scales, &sc, &m);
                    const uint8_t *q = qs + 32 * (s / 2);
                    for (int i = 0; i < 32; i++) {
                        v[i] = (float) ((s & 1) ? (q[i] >> 4) : (q[i] & 0x0F));
                    }
                    int sub = 8 * b + s;
                    block_dot(v, x + 32 * sub, 4, bd);
                    float ds = d * (float) sc, dm = dmin * (float) m;
                    for (int j = 0; j < 8; j++) {
                        acc[j] = fmaf(bd[j], ds, acc[j]);
                        mac[j] = fmaf(xsums[8 * sub + j], dm, mac[j]);
                    }
                }
            }
            return hsum8(acc) - hsum8(mac);
        case BFK_Q6_K:
            for (int b = 0; b < cols / 256; b++) {
                const uint8_t *blk = row + 210 * b;
                const uint8_t *ql = blk, *qh = blk + 128;
                const int8_t *sc = (const int8_t *) (blk + 192);
                float d = read_half(blk + 208);
                for (int s = 0; s < 16; s++) {
                    int c = s / 8, t = s % 8, k = t / 2, hf = t % 2;
                    const uint8_t *l = ql + 64 * c + 32 * (k & 1) + 16 * hf;
                    const uint8_t *h = qh + 32 * c + 16 * hf;
                    for (int i = 0; i < 16; i++) {
                        int nib = k >= 2 ? l[i] >> 4 : l[i] & 0x0F;
                        v[i] = (float) ((nib | (((h[i] >> (2 * k)) & 3) << 4)) - 32);
                    }
                    block_dot(v, x + 256 * b + 128 * c + 32 * k + 16 * hf, 2, bd);
                    float ds = d * (float) sc[s];
                    for (int j = 0; j < 8; j++) {
                        acc[j] = fmaf(bd[j], ds, acc[j]);
                    }
                }
            }
            return hsum8(acc);
        default:
            return 0;
    }
}

static void matmul_portable(const bfk_matrix *w, const float *x, int ldx, int m_count, const float *xsums,
                            int lds, float *out, int ldo, int n0, int n1, int add) {
    for (int n = n0; n < n1; n++) {
        for (int m = 0; m < m_count; m++) {
            float r = dot_portable(w, n, x + (size_t) m * ldx, xsums ? xsums + (size_t) m * lds : NULL);
            float *o = out + (size_t) m * ldo + n;
            *o = add ? *o + r : r;
        }
    }
}

/* ------------------------------------------------------------------ AVX2 products */
#if BFK_X86


/* 8 unsigned bytes (low 8 of the register) to floats */
AVX2 static INLINE __m256 u8x8(__m128i b) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
}

/* 8 signed bytes (low 8 of the register) to floats */
AVX2 static INLINE __m256 i8x8(__m128i b) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

AVX2 static INLINE __m256 block_dot4(__m256 w0, __m256 w1, __m256 w2, __m256 w3, const float *x) {
    __m256 bd = _mm256_mul_ps(w0, _mm256_loadu_ps(x));
    bd = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + 8), bd);
    bd = _mm256_fmadd_ps(w2, _mm256_loadu_ps(x + 16), bd);
    return _mm256_fmadd_ps(w3, _mm256_loadu_ps(x + 24), bd);
}

/* Decodes a block of 32 into four groups of 8 floats and its scale. */
AVX2 static INLINE __m256 i8x8_at(const uint8_t *p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *) p)));
}

AVX2 static INLINE void decode_q8_0(const uint8_t *blk, __m256 w[4], __m256 *d) {
    *d = _mm256_set1_ps(_cvtsh_ss(read_u16(blk)));
    w[0] = i8x8_at(blk + 2);
    w[1] = i8x8_at(blk + 10);
    w[2] = i8x8_at(blk + 18);
    w[3] = i8x8_at(blk + 26);
}

AVX2 static INLINE void decode_q4_0(const uint8_t *blk, __m256 w[4], __m256 *d) {
    *d = _mm256_set1_ps(_cvtsh_ss(read_u16(blk)));
    __m128i raw = _mm_loadu_si128((const __m128i *) (blk + 2));
    __m128i mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    __m128i lo = _mm_sub_epi8(_mm_and_si128(raw, mask), eight);
    __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), mask), eight);
    w[0] = i8x8(lo);
    w[1] = i8x8(_mm_srli_si128(lo, 8));
    w[2] = i8x8(hi);
    w[3] = i8x8(_mm_srli_si128(hi, 8));
}

#define MAX_MT 4

/*
 * MT rows of x (MT <= 4) times NT rows of w (NT <= 2): the register tile of one call. Written once per format with
 * MT and NT constants, so that each instance keeps its accumulators in registers.
 */
#define TILE_BEGIN(MT, NT) \
    __m256 acc[MT][NT]; \
    for (int i = 0; i < MT; i++) for (int t = 0; t < NT; t++) acc[i][t] = _mm256_setzero_ps();

#define TILE_END(MT, NT, RESULT) \
    for (int i = 0; i < MT; i++) for (int t = 0; t < NT; t++) { \
        float r = RESULT; \
        float *o = out + (size_t) i * ldo + n + t; \
        *o = add ? *o + r : r; \
    }

#define SIMPLE_BLOCK_KERNEL(NAME, DECODE, BLOCK_BYTES) \
AVX2 static INLINE void NAME(const bfk_matrix *w, const float *x, int ldx, float *out, int ldo, int n, int add, \
                             const int MT, const int NT) { \
    int nb = w->cols / 32; \
    TILE_BEGIN(MAX_MT, 2) \
    for (int b = 0; b < nb; b++) { \
        prefetch_next_tile(w, n, NT, BLOCK_BYTES, b); \
        for (int t = 0; t < NT; t++) { \
            __m256 wv[4], d; \
            DECODE(w->data + (size_t) (n + t) * w->row_bytes + (size_t) BLOCK_BYTES * b, wv, &d); \
            for (int i = 0; i < MT; i++) { \
                acc[i][t] = _mm256_fmadd_ps(block_dot4(wv[0], wv[1], wv[2], wv[3], x + (size_t) i * ldx + 32 * b), d, \
                                            acc[i][t]); \
            } \
        } \
    } \
    TILE_END(MT, NT, hsum256(acc[i][t])) \
}

SIMPLE_BLOCK_KERNEL(tile_q8_0, decode_q8_0, 34)
SIMPLE_BLOCK_KERNEL(tile_q4_0, decode_q4_0, 18)

/*
 * Q4_K's eight 6-bit scales and mins of a super-block, times d and dmin, as two vectors (lane j: sub-block j):
 * ggml's unpacking of the 12 bytes through 32-bit words, then one conversion and product for all eight.
 */
AVX2 static INLINE void q4_k_scales(const uint8_t *blk, __m256 *ds, __m256 *dm) {
    uint32_t u[4];
    memcpy(u, blk + 4, 12);
    const uint32_t m1 = 0x3f3f3f3f, m2 = 0x0f0f0f0f, m3 = 0x03030303;
    u[3] = ((u[2] >> 4) & m2) | (((u[1] >> 6) & m3) << 4);
    uint32_t mins_lo = u[1] & m1;
    u[1] = (u[2] & m2) | (((u[0] >> 6) & m3) << 4);
    u[2] = mins_lo;
    u[0] &= m1;
    __m128i bytes = _mm_loadu_si128((const __m128i *) u); /* scales 0-7, then mins 0-7 */
    *ds = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(read_u16(blk))), u8x8(bytes));
    *dm = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(read_u16(blk + 2))), u8x8(_mm_srli_si128(bytes, 8)));
}

/* Lane j of v in every lane. */
AVX2 static INLINE __m256 lane(__m256 v, int j) {
    return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(j));
}

/*
 * Q4_K: a pair of sub-blocks (64 weights) shares 32 bytes, low nibbles for the first and high for the second; the
 * scales of all eight are unpacked once per super-block. Per sub-block the operations are the portable kernel's.
 */
AVX2 static INLINE void tile_q4_k(const bfk_matrix *w, const float *x, int ldx, const float *xsums, int lds,
                                  float *out, int ldo, int n, int add, const int MT, const int NT) {
    int nb = w->cols / 256;
    TILE_BEGIN(MAX_MT, 2)
    __m256 mac[MAX_MT][2];
    for (int i = 0; i < MT; i++) for (int t = 0; t < NT; t++) mac[i][t] = _mm256_setzero_ps();
    __m256i mask = _mm256_set1_epi8(0x0F);
    for (int b = 0; b < nb; b++) {
        prefetch_next_tile(w, n, NT, 144, b);
        for (int t = 0; t < NT; t++) {
            const uint8_t *blk = w->data + (size_t) (n + t) * w->row_bytes + (size_t) 144 * b;
            __m256 dsv, dmv;
            q4_k_scales(blk, &dsv, &dmv);
            for (int pair = 0; pair < 4; pair++) {
                __m256i raw = _mm256_loadu_si256((const __m256i *) (blk + 16 + 32 * pair));
                __m256i nibbles[2] = {_mm256_and_si256(raw, mask), _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask)};
                for (int half = 0; half < 2; half++) {
                    int s = 2 * pair + half;
                    __m128i lo = _mm256_castsi256_si128(nibbles[half]), hi = _mm256_extracti128_si256(nibbles[half], 1);
                    __m256 w0 = u8x8(lo), w1 = u8x8(_mm_srli_si128(lo, 8)), w2 = u8x8(hi), w3 = u8x8(_mm_srli_si128(hi, 8));
                    __m256 ds = lane(dsv, s), dm = lane(dmv, s);
                    int sub = 8 * b + s;
                    for (int i = 0; i < MT; i++) {
                        acc[i][t] = _mm256_fmadd_ps(block_dot4(w0, w1, w2, w3, x + (size_t) i * ldx + 32 * sub), ds, acc[i][t]);
                        mac[i][t] = _mm256_fmadd_ps(_mm256_loadu_ps(xsums + (size_t) i * lds + 8 * sub), dm, mac[i][t]);
                    }
                }
            }
        }
    }
    TILE_END(MT, NT, hsum256(acc[i][t]) - hsum256(mac[i][t]))
}

/*
 * Q6_K: the two sub-blocks of 16 that share a run of 32 low-bit bytes and 32 high-bit bytes are decoded together by
 * 256-bit integer operations; per sub-block the floating-point operations are the portable kernel's.
 */
AVX2 static INLINE void tile_q6_k(const bfk_matrix *w, const float *x, int ldx, float *out, int ldo, int n, int add,
                                  const int MT, const int NT) {
    int nb = w->cols / 256;
    TILE_BEGIN(MAX_MT, 2)
    __m256i mask = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
    for (int b = 0; b < nb; b++) {
        prefetch_next_tile(w, n, NT, 210, b);
        for (int t = 0; t < NT; t++) {
            const uint8_t *blk = w->data + (size_t) (n + t) * w->row_bytes + (size_t) 210 * b;
            const int8_t *sc = (const int8_t *) (blk + 192);
            float d = _cvtsh_ss(read_u16(blk + 208));
            for (int c = 0; c < 2; c++) {
                __m256i h = _mm256_loadu_si256((const __m256i *) (blk + 128 + 32 * c));
                for (int k = 0; k < 4; k++) {
                    __m256i l = _mm256_loadu_si256((const __m256i *) (blk + 64 * c + 32 * (k & 1)));
                    __m256i nib = k >= 2 ? _mm256_and_si256(_mm256_srli_epi16(l, 4), mask) : _mm256_and_si256(l, mask);
                    __m256i hb = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(2 * k)), three);
                    __m256i q = _mm256_sub_epi8(_mm256_or_si256(nib, _mm256_slli_epi16(hb, 4)), bias);
                    __m128i q0 = _mm256_castsi256_si128(q), q1 = _mm256_extracti128_si256(q, 1);
                    __m256 w0 = i8x8(q0), w1 = i8x8(_mm_srli_si128(q0, 8));
                    __m256 w2 = i8x8(q1), w3 = i8x8(_mm_srli_si128(q1, 8));
                    int s = 8 * c + 2 * k;
                    __m256 ds0 = _mm256_set1_ps(d * (float) sc[s]), ds1 = _mm256_set1_ps(d * (float) sc[s + 1]);
                    int off = 256 * b + 128 * c + 32 * k;
                    for (int i = 0; i < MT; i++) {
                        const float *xr = x + (size_t) i * ldx + off;
                        __m256 bd = _mm256_mul_ps(w0, _mm256_loadu_ps(xr));
                        bd = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xr + 8), bd);
                        acc[i][t] = _mm256_fmadd_ps(bd, ds0, acc[i][t]);
                        bd = _mm256_mul_ps(w2, _mm256_loadu_ps(xr + 16));
                        bd = _mm256_fmadd_ps(w3, _mm256_loadu_ps(xr + 24), bd);
                        acc[i][t] = _mm256_fmadd_ps(bd, ds1, acc[i][t]);
                    }
                }
            }
        }
    }
    TILE_END(MT, NT, hsum256(acc[i][t]))
}

AVX2 static INLINE __m256 load_weights8(int type, const uint8_t *row, int k) {
    switch (type) {
        case BFK_F32:
            return _mm256_loadu_ps((const float *) row + k);
        case BFK_F16:
            return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (row + 2 * k)));
        default: /* BF16 */
            return _mm256_castsi256_ps(_mm256_slli_epi32(
                    _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *) (row + 2 * k))), 16));
    }
}

AVX2 static INLINE void tile_float(const bfk_matrix *w, const float *x, int ldx, float *out, int ldo, int n, int add,
                                   const int MT, const int NT) {
    TILE_BEGIN(MAX_MT, 2)
    size_t per16 = w->row_bytes / (size_t) w->cols * 16; /* the bytes of 16 weights */
    for (int k = 0; k < w->cols; k += 8) {
        if ((k & 15) == 0) {
            prefetch_next_tile(w, n, NT, per16, k / 16);
        }
        for (int t = 0; t < NT; t++) {
            __m256 wv = load_weights8(w->type, w->data + (size_t) (n + t) * w->row_bytes, k);
            for (int i = 0; i < MT; i++) {
                acc[i][t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + (size_t) i * ldx + k), acc[i][t]);
            }
        }
    }
    TILE_END(MT, NT, hsum256(acc[i][t]))
}

/* One tile of mt rows (1-4) and nt columns (1-2), dispatched to instances with constant sizes. */
AVX2 static void tile_avx2(const bfk_matrix *w, const float *x, int ldx, const float *xsums, int lds, float *out,
                           int ldo, int n, int add, int mt, int nt) {
#define DISPATCH(CALL) \
    switch (mt * 2 + nt) { \
        case 3: CALL(1, 1); break; case 4: CALL(1, 2); break; \
        case 5: CALL(2, 1); break; case 6: CALL(2, 2); break; \
        case 7: CALL(3, 1); break; case 9: CALL(4, 1); break; \
        default: break; \
    }
    switch (w->type) {
        case BFK_Q8_0: {
#define C(M, N) tile_q8_0(w, x, ldx, out, ldo, n, add, M, N)
            DISPATCH(C)
#undef C
            break;
        }
        case BFK_Q4_0: {
#define C(M, N) tile_q4_0(w, x, ldx, out, ldo, n, add, M, N)
            DISPATCH(C)
#undef C
            break;
        }
        case BFK_Q4_K: {
#define C(M, N) tile_q4_k(w, x, ldx, xsums, lds, out, ldo, n, add, M, N)
            DISPATCH(C)
#undef C
            break;
        }
        case BFK_Q6_K: {
#define C(M, N) tile_q6_k(w, x, ldx, out, ldo, n, add, M, N)
            DISPATCH(C)
#undef C
            break;
        }
        default: {
#define C(M, N) tile_float(w, x, ldx, out, ldo, n, add, M, N)
            DISPATCH(C)
#undef C
            break;
        }
    }
#undef DISPATCH
}

/*
 * The tiles cover columns in groups of 16 (their weights stay in L1 while every group of rows passes over them), rows
 * in groups of up to 4, and columns two at a time where the registers allow.
 */
AVX2 static void matmul_avx2(const bfk_matrix *w, const float *x, int ldx, int m_count, const float *xsums, int lds,
                             float *out, int ldo, int n0, int n1, int add) {
    for (int nb = n0; nb < n1; nb += 16) {
        int ne = nb + 16 < n1 ? nb + 16 : n1;
        for (int m0 = 0; m0 < m_count; m0 += MAX_MT) {
            int mt = m_count - m0 < MAX_MT ? m_count - m0 : MAX_MT;
            int pair = mt <= 2;
            const float *xm = x + (size_t) m0 * ldx;
            const float *sm = xsums ? xsums + (size_t) m0 * lds : NULL;
            float *om = out + (size_t) m0 * ldo;
            for (int n = nb; n < ne;) {
                int nt = pair && n + 1 < ne ? 2 : 1;
                tile_avx2(w, xm, ldx, sm, lds, om, ldo, n, add, mt, nt);
                n += nt;
            }
        }
    }
}

#endif /* BFK_X86 */

void bfk_matmul_range(const bfk_matrix *w, const float *x, int ldx, int m_count, const float *xsums, int lds,
                      float *out, int ldo, int n0, int n1, int add) {
#if BFK_X86
    if (bfk_uses_avx2()) {
        matmul_avx2(w, x, ldx, m_count, xsums, lds, out, ldo, n0, n1, add);
        return;
    }
#endif
    matmul_portable(w, x, ldx, m_count, xsums, lds, out, ldo, n0, n1, add);
}

/* ------------------------------------------------------------------ dequantization of one row */

void bfk_dequantize_row(const bfk_matrix *w, int r, float *y) {
    if (w->interleaved) {
        bfk_x8_dequantize_row(w, r, y);
        return;
    }
    const uint8_t *row = w->data + (size_t) r * w->row_bytes;
    int cols = w->cols;
    switch (w->type) {
        case BFK_F32:
            memcpy(y, row, (size_t) cols * 4);
            break;
        case BFK_F16:
            for (int k = 0; k < cols; k++) y[k] = half_to_float(read_u16(row + 2 * k));
            break;
        case BFK_BF16:
            for (int k = 0; k < cols; k++) y[k] = bf16_to_float(read_u16(row + 2 * k));
            break;
        case BFK_Q8_0:
            for (int b = 0; b < cols / 32; b++) {
                float d = read_half(row + 34 * b);
                for (int j = 0; j < 32; j++) y[32 * b + j] = (float) (int8_t) row[34 * b + 2 + j] * d;
            }
            break;
        case BFK_Q4_0:
            for (int b = 0; b < cols / 32; b++) {
                const uint8_t *blk = row + 18 * b;
                float d = read_half(blk);
                for (int j = 0; j < 16; j++) {
                    y[32 * b + j] = (float) ((blk[2 + j] & 0x0F) - 8) * d;
                    y[32 * b + j + 16] = (float) ((blk[2 + j] >> 4) - 8) * d;
                }
            }
            break;
        case BFK_Q4_K:
            for (int b = 0; b < cols / 256; b++) {
                const uint8_t *blk = row + 144 * b;
                float d = read_half(blk), dmin = read_half(blk + 2);
                const uint8_t *q = blk + 16;
                float *o = y + 256 * b;
                for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
                    int sc, m;
                    scale_min_k4(is, blk + 4, &sc, &m);
                    float d1 = d * (float) sc, m1 = dmin * (float) m;
                    scale_min_k4(is + 1, blk + 4, &sc, &m);
                    float d2 = d * (float) sc, m2 = dmin * (float) m;
                    for (int l = 0; l < 32; l++) o[j + l] = d1 * (float) (q[l] & 0xF) - m1;
                    for (int l = 0; l < 32; l++) o[j + 32 + l] = d2 * (float) (q[l] >> 4) - m2;
                }
            }
            break;
        case BFK_Q6_K:
            for (int b = 0; b < cols / 256; b++) {
                const uint8_t *blk = row + 210 * b;
                const uint8_t *ql = blk, *qh = blk + 128;
                const int8_t *sc = (const int8_t *) (blk + 192);
                float d = read_half(blk + 208);
                float *o = y + 256 * b;
                for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8) {
                    for (int l = 0; l < 32; l++) {
                        int is = l / 16;
                        int q1 = (int) ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                        int q2 = (int) ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                        int q3 = (int) ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                        int q4 = (int) ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                        o[n + l] = d * (float) sc[is] * (float) q1;
                        o[n + l + 32] = d * (float) sc[is + 2] * (float) q2;
                        o[n + l + 64] = d * (float) sc[is + 4] * (float) q3;
                        o[n + l + 96] = d * (float) sc[is + 6] * (float) q4;
                    }
                }
            }
            break;
        default:
            memset(y, 0, (size_t) cols * 4);
    }
}

/* ------------------------------------------------------------------ elementwise */

float bfk_dot(const float *a, const float *b, int n) {
#if BFK_X86
    if (bfk_uses_avx2()) {
        extern float bfk_dot_avx2(const float *a, const float *b, int n);
        return bfk_dot_avx2(a, b, n);
    }
#endif
    float acc[8] = {0};
    for (int k = 0; k < n; k += 8) {
        for (int j = 0; j < 8; j++) acc[j] = fmaf(a[k + j], b[k + j], acc[j]);
    }
    return hsum8(acc);
}

#if BFK_X86
AVX2 float bfk_dot_avx2(const float *a, const float *b, int n) {
    __m256 acc = _mm256_setzero_ps();
    for (int k = 0; k < n; k += 8) {
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), acc);
    }
    return hsum256(acc);
}
#endif

/*
 * RMSNorm as transformers computes it in float32: mean of squares (a sum, then one division by n), then
 * weight * (x * rsqrt(mean + eps)); the sum in this file's 8-lane order.
 */
void bfk_rms_norm(const float *x, const float *weight, int n, float eps, float *out) {
    float ss = bfk_dot(x, x, n);
    float inv = 1.0f / sqrtf(ss / (float) n + eps);
    for (int k = 0; k < n; k++) {
        out[k] = weight[k] * (x[k] * inv);
    }
}

/*
 * exp(x) for float32 by one fixed sequence of operations (Cody-Waite reduction by ln 2 in two parts, a degree-6
 * polynomial by fused multiply-adds, scaling by 2^n through the exponent bits), written alike for 8 lanes and one, so
 * that every machine gets the same bits; relative error below 2e-7 over the range softmax and SiLU use.
 */
static const float EXP_HI = 88.0f, EXP_LO = -87.3365478515625f;
static const float LOG2E = 1.44269504088896341f, LN2_HI = 0.693359375f, LN2_LO = -2.12194440e-4f;
static const float P0 = 1.9875691500e-4f, P1 = 1.3981999507e-3f, P2 = 8.3334519073e-3f, P3 = 4.1665795894e-2f,
        P4 = 1.6666665459e-1f, P5 = 5.0000001201e-1f;

static inline float exp_one(float x) {
    x = x > EXP_HI ? EXP_HI : x;
    x = x < EXP_LO ? EXP_LO : x;
    float n = nearbyintf(x * LOG2E);
    float r = fmaf(n, -LN2_HI, x);
    r = fmaf(n, -LN2_LO, r);
    float p = fmaf(P0, r, P1);
    p = fmaf(p, r, P2);
    p = fmaf(p, r, P3);
    p = fmaf(p, r, P4);
    p = fmaf(p, r, P5);
    float r2 = r * r;
    p = fmaf(p, r2, r);
    p = p + 1.0f;
    int32_t bits = ((int32_t) n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    return p * scale;
}

#if BFK_X86
AVX2 static inline __m256 exp8(__m256 x) {
    x = _mm256_min_ps(x, _mm256_set1_ps(EXP_HI));
    x = _mm256_max_ps(x, _mm256_set1_ps(EXP_LO));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_HI), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(-LN2_LO), r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(P0), r, _mm256_set1_ps(P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P5));
    __m256 r2 = _mm256_mul_ps(r, r);
    p = _mm256_fmadd_ps(p, r2, r);
    p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

AVX2 static void exp_avx2(const float *x, float *out, int n) {
    int k = 0;
    for (; k + 8 <= n; k += 8) {
        _mm256_storeu_ps(out + k, exp8(_mm256_loadu_ps(x + k)));
    }
    for (; k < n; k++) {
        out[k] = exp_one(x[k]);
    }
}

AVX2 static void silu_mul_avx2(const float *gate, const float *up, float *out, int n) {
    int k = 0;
    __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (; k + 8 <= n; k += 8) {
        __m256 g = _mm256_loadu_ps(gate + k);
        __m256 e = exp8(_mm256_sub_ps(zero, g));
        _mm256_storeu_ps(out + k, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(e, one)), _mm256_loadu_ps(up + k)));
    }
    for (; k < n; k++) {
        out[k] = gate[k] / (exp_one(-gate[k]) + 1.0f) * up[k];
    }
}
#endif

void bfk_exp(const float *x, float *out, int n) {
#if BFK_X86
    if (bfk_uses_avx2()) {
        exp_avx2(x, out, n);
        return;
    }
#endif
    for (int k = 0; k < n; k++) {
        out[k] = exp_one(x[k]);
    }
}

/* silu(gate) * up, silu(g) = g / (1 + exp(-g)) (transformers' SiLU is g * sigmoid(g)). */
void bfk_silu_mul(const float *gate, const float *up, float *out, int n) {
#if BFK_X86
    if (bfk_uses_avx2()) {
        silu_mul_avx2(gate, up, out, n);
        return;
    }
#endif
    for (int k = 0; k < n; k++) {
        out[k] = gate[k] / (exp_one(-gate[k]) + 1.0f) * up[k];
    }
}

/* ------------------------------------------------------------------ attention of one query */

/*
 * A position's softmax weight, flushed to zero below the smallest normal float (2^-126): such a weight moves no output
 * by a representable amount next to the others, and a subnormal operand makes Intel's multiply-adds take a
 * micro-code assist of a hundred cycles or more (far positions of a peaked attention are subnormal: with a few hundred
 * of them, most of a decode step went there). The same rule on every path keeps them bit-identical.
 */
static inline float attention_weight(float e, float sum) {
    float w = e / sum;
    return w < 0x1p-126f ? 0.0f : w;
}

static void attend_portable(const float *q, const float *keys, const float *values, int len, int hd, float scale,
                            float *scores, float *out) {
    float max = -INFINITY;
    for (int u = 0; u < len; u++) {
        float acc[8] = {0};
        for (int k = 0; k < hd; k += 8) {
            for (int j = 0; j < 8 && k + j < hd; j++) acc[j] = fmaf(q[k + j], keys[(size_t) u * hd + k + j], acc[j]);
        }
        scores[u] = hsum8(acc) * scale;
        max = scores[u] > max ? scores[u] : max;
    }
    for (int u = 0; u < len; u++) {
        scores[u] = exp_one(scores[u] - max);
    }
    float sum = 0;
    for (int u = 0; u < len; u++) {
        sum += scores[u];
    }
    for (int e = 0; e < hd; e++) {
        out[e] = 0;
    }
    for (int u = 0; u < len; u++) {
        float w = attention_weight(scores[u], sum);
        for (int e = 0; e < hd; e++) {
            out[e] = fmaf(w, values[(size_t) u * hd + e], out[e]);
        }
    }
}

#if BFK_X86
/*
 * The same operations as attend_portable in the same order for each output value, arranged for the machine: the
 * scores of four positions at a time (four independent chains instead of one waiting on the previous fma), each
 * position's weight divided once (not once per 8 values), and the values read position after position (the
 * cache's order: reading them 8 values at a time across all positions went through memory hd / 8 times, strided,
 * and at a few hundred positions took half of a decode step).
 */
AVX2 static void attend_avx2(const float *q, const float *keys, const float *values, int len, int hd, float scale,
                             float *scores, float *out) {
    float max = -INFINITY;
    int u = 0;
    for (; u + 4 <= len; u += 4) {
        const float *k = keys + (size_t) u * hd;
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
        for (int e = 0; e < hd; e += 8) {
            __m256 qe = _mm256_loadu_ps(q + e);
            a0 = _mm256_fmadd_ps(qe, _mm256_loadu_ps(k + e), a0);
            a1 = _mm256_fmadd_ps(qe, _mm256_loadu_ps(k + hd + e), a1);
            a2 = _mm256_fmadd_ps(qe, _mm256_loadu_ps(k + 2 * hd + e), a2);
            a3 = _mm256_fmadd_ps(qe, _mm256_loadu_ps(k + 3 * hd + e), a3);
        }
        scores[u] = hsum256(a0) * scale;
        scores[u + 1] = hsum256(a1) * scale;
        scores[u + 2] = hsum256(a2) * scale;
        scores[u + 3] = hsum256(a3) * scale;
    }
    for (; u < len; u++) {
        const float *k = keys + (size_t) u * hd;
        __m256 acc = _mm256_setzero_ps();
        for (int e = 0; e < hd; e += 8) {
            acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + e), _mm256_loadu_ps(k + e), acc);
        }
        scores[u] = hsum256(acc) * scale;
    }
    for (u = 0; u < len; u++) {
        max = scores[u] > max ? scores[u] : max;
    }
    __m256 vmax = _mm256_set1_ps(max);
    for (u = 0; u + 8 <= len; u += 8) {
        _mm256_storeu_ps(scores + u, exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + u), vmax)));
    }
    for (; u < len; u++) {
        scores[u] = exp_one(scores[u] - max);
    }
    float sum = 0;
    for (u = 0; u < len; u++) {
        sum += scores[u];
    }
    for (u = 0; u < len; u++) {
        scores[u] = attention_weight(scores[u], sum);
    }
    int e0 = 0;
    for (; e0 + 64 <= hd; e0 += 64) {
        __m256 o0 = _mm256_setzero_ps(), o1 = _mm256_setzero_ps(), o2 = _mm256_setzero_ps(), o3 = _mm256_setzero_ps();
        __m256 o4 = _mm256_setzero_ps(), o5 = _mm256_setzero_ps(), o6 = _mm256_setzero_ps(), o7 = _mm256_setzero_ps();
        const float *v = values + e0;
        for (u = 0; u < len; u++, v += hd) {
            __m256 w = _mm256_broadcast_ss(scores + u);
            o0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(v), o0);
            o1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + 8), o1);
            o2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + 16), o2);
            o3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + 24), o3);
            o4 = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + 32), o4);
            o5 = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + 40), o5);
            o6 = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + 48), o6);
            o7 = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + 56), o7);
        }
        _mm256_storeu_ps(out + e0, o0);
        _mm256_storeu_ps(out + e0 + 8, o1);
        _mm256_storeu_ps(out + e0 + 16, o2);
        _mm256_storeu_ps(out + e0 + 24, o3);
        _mm256_storeu_ps(out + e0 + 32, o4);
        _mm256_storeu_ps(out + e0 + 40, o5);
        _mm256_storeu_ps(out + e0 + 48, o6);
        _mm256_storeu_ps(out + e0 + 56, o7);
    }
    for (; e0 < hd; e0 += 8) {
        __m256 o = _mm256_setzero_ps();
        for (u = 0; u < len; u++) {
            o = _mm256_fmadd_ps(_mm256_broadcast_ss(scores + u), _mm256_loadu_ps(values + (size_t) u * hd + e0), o);
        }
        _mm256_storeu_ps(out + e0, o);
    }
}
#endif

void bfk_attend(const float *q, const float *keys, const float *values, int len, int hd, float scale, float *scores,
                float *out) {
#if BFK_X86
    /* the AVX2 loop takes 8 values of a head at a time; another head dim (a head dim of 12 once read past the query
       and key and wrote over the next head's output) takes the portable loop, its lanes past the head dim absent */
    if (bfk_uses_avx2() && hd % 8 == 0) {
        attend_avx2(q, keys, values, len, hd, scale, scores, out);
        return;
    }
#endif
    attend_portable(q, keys, values, len, hd, scale, scores, out);
}
