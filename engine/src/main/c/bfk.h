/*
 * Butterfly's CPU kernels for Llama-family stages with quantized weights (libbutterfly_kernels.so, called from
 * io.butterfly.worker.engine.cpu through JNI).
 *
 * Weights are kept as the shards hold them: ggml's blocks (Q8_0, Q4_0, Q4_K, Q6_K) or plain F32/F16/BF16 rows, never
 * quantized here; for the products with 8-bit activations, Q8_0 and Q4_0 matrices are best given with their rows
 * interleaved eight at a time (bfk_x8.c: the same values in as many bytes). Norms, attention and the residual stream
 * are float32; a projection multiplies float32 inputs by the weights' exact values (weight-only), or, for block
 * formats when the stage says so, inputs rounded to 8 bits a block of 32 at a time by integer dot products, as
 * llama.cpp does (bfk_q8.c).
 *
 * Every result is defined operation by operation (most lane by lane, in the order of an 8-lane AVX2 vector; the 8-bit
 * products of Q8_0 and Q4_0 block by block): the vector kernels and the portable C ones compute the same operations
 * (products, fused multiply-adds, one fixed tree for the horizontal sums, the same exp polynomial), so every worker
 * gets the same bits whatever its CPU, and a row gets the same bits whatever rows it is computed with and however
 * the threads divide the work.
 */
#ifndef BFK_H
#define BFK_H

#include <stdint.h>
#include <stddef.h>

/* ggml type numbers */
enum bfk_type {
    BFK_F32 = 0,
    BFK_F16 = 1,
    BFK_Q4_0 = 2,
    BFK_Q8_0 = 8,
    BFK_Q4_K = 12,
    BFK_Q6_K = 14,
    BFK_BF16 = 30,
};

/* A [rows, cols] matrix, row-major, in ggml's layout for its type, or with its rows interleaved eight at a time
   (bfk_x8.c) where `interleaved`: then only the 8-bit products and the row lookup read it. */
typedef struct {
    int type;
    int rows;
    int cols;
    size_t row_bytes;
    const uint8_t *data;
    int interleaved;
} bfk_matrix;

/* ---- thread pool (bfk_pool.c) ---- */
typedef struct bfk_pool bfk_pool;
typedef void (*bfk_task)(void *arg, int ith, int nth);
bfk_pool *bfk_pool_create(int threads);
void bfk_pool_run(bfk_pool *pool, bfk_task task, void *arg);
void bfk_pool_rest(bfk_pool *pool);
int bfk_pool_threads(const bfk_pool *pool);
void bfk_pool_destroy(bfk_pool *pool);

/* ---- kernels (bfk_kernels.c) ---- */
int bfk_has_avx2(void);
/* Whether the AVX2 kernels are in use (else the portable ones); for tests, force the portable ones. */
int bfk_uses_avx2(void);
void bfk_force_portable(int on);
/* vpdpbusd on 256-bit vectors (bfk_inline.h): the 8-bit products use it where the CPU has it, in the encoding it
   has (BFK_VNNI_AVX, else BFK_VNNI_AVX512; 0 for neither); the integer sums are the same, so the bits are. */
#define BFK_VNNI_AVX 1
#define BFK_VNNI_AVX512 2
int bfk_has_vnni(void);
int bfk_uses_vnni(void);
void bfk_force_without_vnni(int on);
size_t bfk_row_bytes(int type, int cols);
int bfk_type_supported(int type);

/*
 * out[m * ldo + n] = (add ? out[m * ldo + n] : 0) + sum_k x[m * ldx + k] * w[n][k], for rows m in [0, m_count) and
 * outputs n in [n0, n1). xsums: per row (lds floats apart), what bfk_row_sums wrote for w's type (NULL when it needs
 * none).
 */
void bfk_matmul_range(const bfk_matrix *w, const float *x, int ldx, int m_count, const float *xsums, int lds,
                      float *out, int ldo, int n0, int n1, int add);
/* Floats bfk_row_sums writes per row for a matrix of this type and column count (0: none needed). */
int bfk_row_sums_floats(int type, int cols);
void bfk_row_sums(int type, const float *x, int cols, float *sums);

/*
 * 8-bit activations (bfk_q8.c): a row of cols values (a multiple of 32) rounded to blocks of 32 signed bytes with a
 * float scale each, laid out as [cols bytes][cols / 32 floats] in bfk_q8_row_bytes(cols) bytes; the same products as
 * bfk_matmul_range from rows so prepared (ldq bytes apart), for the types bfk_q8_supported names.
 */
int bfk_q8_supported(int type);
size_t bfk_q8_row_bytes(int cols);
void bfk_quantize_q8(const float *x, int cols, uint8_t *out);
void bfk_matmul_q8_range(const bfk_matrix *w, const uint8_t *qx, size_t ldq, int m_count, float *out, int ldo, int n0,
                         int n1, int add);

/*
 * Q8_0, Q4_0 and Q6_K with rows interleaved eight at a time (bfk_x8.c), for the 8-bit products: whether w can be,
 * its rows so written into out (w->rows * w->row_bytes bytes), and the products from such a matrix (n0, n1 multiples
 * of 8 for the vector kernels), the same bits as from ggml's layout.
 */
int bfk_x8_applies(const bfk_matrix *w);
void bfk_x8_interleave(const bfk_matrix *w, uint8_t *out);
void bfk_x8_matmul_range(const bfk_matrix *w, const uint8_t *qx, size_t ldq, int m_count, float *out, int ldo, int n0,
                         int n1, int add);
void bfk_x8_dequantize_row(const bfk_matrix *w, int row, float *out);

/* One row of w as float32 values (the embedding lookup). */
void bfk_dequantize_row(const bfk_matrix *w, int row, float *out);

/* ---- elementwise and attention ---- */
float bfk_dot(const float *a, const float *b, int n);           /* n a multiple of 8 */
void bfk_rms_norm(const float *x, const float *weight, int n, float eps, float *out);
void bfk_exp(const float *x, float *out, int n);
void bfk_silu_mul(const float *gate, const float *up, float *out, int n);
/*
 * One query's attention over len cached positions: scores[u] = q . keys[u] * scale, softmax (exp of the difference
 * to the largest, summed in order), out = sum over u of (score[u] / sum) * values[u], accumulated in order of u, a
 * weight score[u] / sum below 2^-126 counted as zero. Any head_dim (a multiple of 8 takes the vector loop);
 * scores has room for len floats.
 */
void bfk_attend(const float *q, const float *keys, const float *values, int len, int head_dim, float scale,
                float *scores, float *out);

/* ---- a Llama-family stage's layers (bfk_stage.c) ---- */
typedef struct bfk_stage bfk_stage;

/* One sequence of a packed batch. */
typedef struct {
    int row;      /* first row of the sequence in the packed batch */
    int n;        /* its new tokens */
    int position; /* absolute position of the first */
    float *kv;    /* its cache: [layers][2][kv_heads][capacity][head_dim] */
    int capacity;
} bfk_seq;

bfk_stage *bfk_stage_create(int hidden, int heads, int kv_heads, int inter, int layers, int max_positions, float eps);
/* A head dim other than hidden / heads (a head shard's slice: few heads over the whole hidden size). */
void bfk_stage_set_head_dim(bfk_stage *s, int head_dim);
/* Whether the stage's quantized matrices multiply 8-bit activations (bfk_q8.c) rather than float32 ones. */
void bfk_stage_set_q8_activations(bfk_stage *s, int on);
/* data (in ggml's layout, or interleaved by bfk_x8_interleave for the 8-bit products) must outlive the stage. */
void bfk_stage_set_matrix(bfk_stage *s, int layer, int slot, int type, int rows, int cols, const void *data,
                          int interleaved);
void bfk_stage_set_vector(bfk_stage *s, int layer, int slot, const float *data);
void bfk_stage_destroy(bfk_stage *s);
int bfk_stage_forward(bfk_stage *s, bfk_pool *pool, float *x, int rows, const bfk_seq *seqs, int nseq,
                      const float *cos, const float *sin);
/* One half of one layer without the residual, x left as it is: attention (mlp 0) or MLP (mlp 1) into out. */
int bfk_stage_half(bfk_stage *s, bfk_pool *pool, int layer, int mlp, const float *x, int rows, const bfk_seq *seqs,
                   int nseq, const float *cos, const float *sin, float *out);
/* Layers [first, end) of the stage only (0 <= first <= end <= layers; -2 otherwise): the same bits as a whole call. */
int bfk_stage_forward_layers(bfk_stage *s, bfk_pool *pool, float *x, int rows, const bfk_seq *seqs, int nseq,
                             const float *cos, const float *sin, int first, int end);
int bfk_product(bfk_pool *pool, const bfk_matrix *w, const float *x, int rows, int q8_activations, float *out);

#endif
