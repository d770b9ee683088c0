/*
 * A Llama-family stage's transformer layers over a packed batch, as transformers computes them in float32:
 * RMSNorm, q/k/v projections (with Qwen2's biases), rotary embeddings (rotate_half convention, tables from the
 * caller), grouped-query causal attention over each sequence's KV cache, the output projection and residual, RMSNorm,
 * SiLU-gated MLP and residual.
 *
 * Each layer is seven phases run by the thread pool, each cut into pieces that threads claim as they come (see
 * bfk_pool.c), so that no result depends on who computes a piece: rows for the norms, output columns for the products
 * (whoever claims a column computes it for every row), (sequence, kv head) pairs for attention.
 */
#include "bfk.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { M_Q, M_K, M_V, M_O, M_GATE, M_UP, M_DOWN, MATRICES };
enum { V_ATTN_NORM, V_FFN_NORM, V_Q_BIAS, V_K_BIAS, V_V_BIAS, VECTORS };

typedef struct {
    bfk_matrix m[MATRICES];
    const float *v[VECTORS];
} bfk_layer;

struct bfk_stage {
    int hidden, heads, kv_heads, head_dim, inter, layers, max_positions;
    float eps;
    int q8; /* quantized matrices multiply 8-bit activations */
    bfk_layer *layer;
    /* scratch, grown as steps need */
    float *buf;
    size_t buf_floats;
};

bfk_stage *bfk_stage_create(int hidden, int heads, int kv_heads, int inter, int layers, int max_positions, float eps) {
    bfk_stage *s = calloc(1, sizeof(bfk_stage));
    if (!s) {
        return NULL;
    }
    s->hidden = hidden;
    s->heads = heads;
    s->kv_heads = kv_heads;
    s->head_dim = hidden / heads;
    s->inter = inter;
    s->layers = layers;
    s->max_positions = max_positions;
    s->eps = eps;
    s->layer = calloc((size_t) (layers > 0 ? layers : 1), sizeof(bfk_layer));
    return s;
}

void bfk_stage_set_matrix(bfk_stage *s, int layer, int slot, int type, int rows, int cols, const void *data,
                          int interleaved) {
    bfk_matrix *m = &s->layer[layer].m[slot];
    m->type = type;
    m->rows = rows;
    m->cols = cols;
    m->row_bytes = bfk_row_bytes(type, cols);
    m->data = data;
    m->interleaved = interleaved;
}

void bfk_stage_set_head_dim(bfk_stage *s, int head_dim) {
    s->head_dim = head_dim;
}

void bfk_stage_set_q8_activations(bfk_stage *s, int on) {
    s->q8 = on;
}

void bfk_stage_set_vector(bfk_stage *s, int layer, int slot, const float *data) {
    s->layer[layer].v[slot] = data;
}

void bfk_stage_destroy(bfk_stage *s) {
    if (s) {
        free(s->layer);
        free(s->buf);
        free(s);
    }
}

/* ------------------------------------------------------------------ one phase's work */

typedef struct {
    bfk_stage *s;
    const bfk_layer *l;
    int layer;
    int rows;
    float *x, *h, *q, *k, *v, *att, *gate, *act, *sums, *scores;
    int sums_stride;
    const bfk_seq *seqs;
    int nseq;
    const float *cos, *sin;
    int scores_stride;
    /* for the products: up to three matrices sharing an input, their outputs, and whether to add to them */
    const bfk_matrix *mm[3];
    float *out[3];
    int ldo[3];
    int count;
    int add;
    const float *in;
    int ldi;
    /* the input's rows rounded to 8 bits, for the matrices that take them */
    uint8_t *qin;
    size_t ldq;
    int quantize;
    int norm_slot;
    const bfk_matrix *sums_for[2];
    /* the next piece of the phase to claim (reset before each phase) */
    atomic_int next;
} phase;

/*
 * The products' columns go in chunks that threads claim as they finish the last: a thread the system preempted
 * (another process on the core, the JVM's own threads) delays the product by a chunk, not by its whole share. About
 * eight chunks a thread, each a whole number of 16-column groups (the tiles' unit); which thread computes a column
 * does not change its bits.
 */
static inline int chunk_size(int n, int nth) {
    int c = (n + nth * 8 - 1) / (nth * 8);
    return c < 16 ? 16 : (c + 15) / 16 * 16;
}

static inline int claim(atomic_int *next, int n, int chunk, int *lo, int *hi) {
    int c = atomic_fetch_add_explicit(next, 1, memory_order_relaxed);
    if ((long) c * chunk >= n) {
        return 0;
    }
    *lo = c * chunk;
    *hi = *lo + chunk < n ? *lo + chunk : n;
    return 1;
}

static int needs_sums(const bfk_matrix *m) {
    return m && m->data && bfk_row_sums_floats(m->type, m->cols) > 0;
}

static int takes_q8(const bfk_stage *s, const bfk_matrix *m) {
    return s->q8 && m && m->data && bfk_q8_supported(m->type);
}

/* What the products of input row r need beside the floats: Q4_K's row sums (float inputs), 8-bit values. */
static void prepare_row(phase *p, const bfk_matrix *sums_for, const float *row, int cols, int r) {
    if (needs_sums(sums_for) && !takes_q8(p->s, sums_for)) {
        bfk_row_sums(sums_for->type, row, cols, p->sums + (size_t) r * p->sums_stride);
    }
    if (p->quantize) {
        bfk_quantize_q8(row, cols, p->qin + (size_t) r * p->ldq);
    }
}

/* One product's columns [a, b), from the 8-bit rows when the matrix takes them. */
static void product_range(const phase *p, const bfk_matrix *m, const float *in, int ldi, float *out, int ldo, int a,
                          int b, int add) {
    if (takes_q8(p->s, m)) {
        bfk_matmul_q8_range(m, p->qin, p->ldq, p->rows, out, ldo, a, b, add);
    } else {
        bfk_matmul_range(m, in, ldi, p->rows, p->sums, p->sums_stride, out, ldo, a, b, add);
    }
}

/* Norm of each of this thread's rows into h, and the row sums the next products need. */
static void norm_task(void *arg, int ith, int nth) {
    phase *p = arg;
    int d = p->s->hidden;
    int r, unused;
    while (claim(&p->next, p->rows, 1, &r, &unused)) {
        bfk_rms_norm(p->x + (size_t) r * d, p->l->v[p->norm_slot], d, p->s->eps, p->h + (size_t) r * d);
        prepare_row(p, p->sums_for[0], p->h + (size_t) r * d, d, r);
    }
}

/* The products of the same input with up to three matrices, the columns of all of them split among the threads. */
static void product_task(void *arg, int ith, int nth) {
    phase *p = arg;
    int total = 0;
    for (int i = 0; i < p->count; i++) {
        total += p->mm[i]->rows;
    }
    int lo, hi, chunk = chunk_size(total, nth);
    while (claim(&p->next, total, chunk, &lo, &hi)) {
        int base = 0;
        for (int i = 0; i < p->count; i++) {
            int rows = p->mm[i]->rows;
            int a = lo > base ? lo - base : 0;
            int b = hi - base < rows ? hi - base : rows;
            if (a < b) {
                product_range(p, p->mm[i], p->in, p->ldi, p->out[i], p->ldo[i], a, b, p->add);
            }
            base += rows;
        }
    }
}

/* Gate and up for this thread's columns of every row, then silu(gate) * up into act. */
static void mlp_task(void *arg, int ith, int nth) {
    phase *p = arg;
    int inter = p->s->inter;
    int lo, hi, chunk = chunk_size(inter, nth);
    while (claim(&p->next, inter, chunk, &lo, &hi)) {
        product_range(p, &p->l->m[M_GATE], p->h, p->s->hidden, p->gate, 2 * inter, lo, hi, 0);
        product_range(p, &p->l->m[M_UP], p->h, p->s->hidden, p->gate + inter, 2 * inter, lo, hi, 0);
        for (int r = 0; r < p->rows; r++) {
            float *g = p->gate + (size_t) r * 2 * inter;
            bfk_silu_mul(g + lo, g + inter + lo, p->act + (size_t) r * inter + lo, hi - lo);
        }
    }
}

/* What the next product (matrix mm[0], input `in`) needs of each of this thread's rows. */
static void prepare_task(void *arg, int ith, int nth) {
    phase *p = arg;
    int r, unused;
    while (claim(&p->next, p->rows, 1, &r, &unused)) {
        prepare_row(p, p->mm[0], p->in + (size_t) r * p->ldi, p->ldi, r);
    }
}

/* x * cos + swap_halves(x) * signed_sin, as llama.py rotates (the tables' sine is [-sin, sin]). */
static void rotate(const float *x, const float *cos, const float *sin, int d, float *out) {
    int half = d / 2;
    for (int i = 0; i < half; i++) {
        out[i] = x[i] * cos[i] + x[i + half] * sin[i];
        out[i + half] = x[i + half] * cos[i + half] + x[i] * sin[i + half];
    }
}

/*
 * Attention of (sequence, kv head) pairs: the chunk's keys (rotated) and values into the cache, then for each query
 * head of the group and each new token, softmax(q . k / sqrt(d)) over the keys up to its own position, times the
 * values.
 */
static void attention_task(void *arg, int ith, int nth) {
    phase *p = arg;
    bfk_stage *s = p->s;
    int hd = s->head_dim, kvh = s->kv_heads, group = s->heads / s->kv_heads;
    int qdim = s->heads * hd, kvdim = kvh * hd;
    float scale = 1.0f / sqrtf((float) hd);
    float *scores = p->scores + (size_t) ith * p->scores_stride;
    float *qrot = scores + p->scores_stride - hd;
    int items = p->nseq * kvh;
    int it, unused;
    while (claim(&p->next, items, 1, &it, &unused)) {
        const bfk_seq *sq = &p->seqs[it / kvh];
        int g = it % kvh;
        size_t plane = (size_t) sq->capacity * hd;
        float *keys = sq->kv + ((size_t) (p->layer * 2 + 0) * kvh + g) * plane;
        float *values = sq->kv + ((size_t) (p->layer * 2 + 1) * kvh + g) * plane;
        for (int t = 0; t < sq->n; t++) {
            int r = sq->row + t;
            rotate(p->k + (size_t) r * kvdim + g * hd, p->cos + (size_t) r * hd, p->sin + (size_t) r * hd, hd,
                   keys + (size_t) (sq->position + t) * hd);
            memcpy(values + (size_t) (sq->position + t) * hd, p->v + (size_t) r * kvdim + g * hd, (size_t) hd * 4);
        }
        for (int j = 0; j < group; j++) {
            int h = g * group + j;
            for (int t = 0; t < sq->n; t++) {
                int r = sq->row + t;
                int len = sq->position + t + 1;
                rotate(p->q + (size_t) r * qdim + h * hd, p->cos + (size_t) r * hd, p->sin + (size_t) r * hd, hd, qrot);
                bfk_attend(qrot, keys, values, len, hd, scale, scores, p->att + (size_t) r * qdim + h * hd);
            }
        }
    }
}

/* ------------------------------------------------------------------ the layers */

static float *scratch(bfk_stage *s, size_t floats) {
    if (floats > s->buf_floats) {
        free(s->buf);
        s->buf = aligned_alloc(64, (floats * 4 + 63) / 64 * 64);
        s->buf_floats = s->buf ? floats : 0;
    }
    return s->buf;
}

/*
 * Runs the stage's layers over x [rows, hidden] in place. seqs: the sequences of the batch with their caches;
 * cos/sin: [rows, head_dim] rotary tables of each row's position. Returns 0, or -1 if memory ran out.
 */
/*
 * A row-wise phase (norm, preparing a product's input) over a few rows runs on the caller alone: split by rows, a
 * decode step's one row leaves the team nothing to do but meet at the barrier, which costs more than the row. Each
 * row is computed by the same code either way, so the bits do not depend on the choice.
 */
/* A phase on the team, its pieces unclaimed. */
static void run(bfk_pool *pool, bfk_task task, phase *p) {
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    bfk_pool_run(pool, task, p);
}

static void run_rows(bfk_pool *pool, bfk_task task, phase *p) {
    if (p->rows <= 4) {
        atomic_store_explicit(&p->next, 0, memory_order_relaxed);
        task(p, 0, 1);
    } else {
        run(pool, task, p);
    }
}

/* The step's scratch and views for layers over x [rows, hidden] into *pp; -1 if memory ran out. */
static int begin(bfk_stage *s, bfk_pool *pool, float *x, int rows, const bfk_seq *seqs, int nseq, const float *cos,
                 const float *sin, phase *pp) {
    int d = s->hidden, hd = s->head_dim, inter = s->inter;
    int qdim = s->heads * hd, kvdim = s->kv_heads * hd;
    int nth = bfk_pool_threads(pool);
    int longest = 0;
    for (int i = 0; i < nseq; i++) {
        int reach = seqs[i].position + seqs[i].n;
        longest = reach > longest ? reach : longest;
    }
    int scores_stride = (longest + hd + 15) / 16 * 16;
    int sums_stride = (d > inter ? d : inter) / 4;
    int widest = d > inter ? d : inter;
    widest = widest > qdim ? widest : qdim;
    size_t ldq = s->q8 ? bfk_q8_row_bytes(widest) : 0;
    size_t need = (size_t) rows * (d + qdim + 2 * kvdim + qdim + 2 * inter + inter + sums_stride)
            + (size_t) nth * scores_stride + (size_t) rows * ldq / 4;
    float *buf = scratch(s, need);
    if (!buf) {
        return -1;
    }
    pp->s = s;
    pp->rows = rows;
    pp->x = x;
    pp->h = buf;
    pp->q = pp->h + (size_t) rows * d;
    pp->k = pp->q + (size_t) rows * qdim;
    pp->v = pp->k + (size_t) rows * kvdim;
    pp->att = pp->v + (size_t) rows * kvdim;
    pp->gate = pp->att + (size_t) rows * qdim;
    pp->act = pp->gate + (size_t) rows * 2 * inter;
    pp->sums = pp->act + (size_t) rows * inter;
    pp->scores = pp->sums + (size_t) rows * sums_stride;
    pp->qin = (uint8_t *) (pp->scores + (size_t) nth * scores_stride);
    pp->ldq = ldq;
    pp->sums_stride = sums_stride;
    pp->scores_stride = scores_stride;
    pp->seqs = seqs;
    pp->nseq = nseq;
    pp->cos = cos;
    pp->sin = sin;
    return 0;
}

/*
 * Layer `layer`'s attention over the norm of p->x: the step's keys and values into the caches, and into out the output
 * projection of the heads' outputs, added to what out holds if add (the residual), written over it if not.
 */
static void attention_half(bfk_pool *pool, phase *p, int layer, float *out, int add) {
    bfk_stage *s = p->s;
    int rows = p->rows, d = s->hidden, qdim = s->heads * s->head_dim, kvdim = s->kv_heads * s->head_dim;
    const bfk_layer *l = &s->layer[layer];
    p->l = l;
    p->layer = layer;
    p->norm_slot = V_ATTN_NORM;
    p->sums_for[0] = needs_sums(&l->m[M_Q]) || needs_sums(&l->m[M_K]) || needs_sums(&l->m[M_V]) ? &l->m[M_Q] : NULL;
    if (p->sums_for[0] && !needs_sums(p->sums_for[0])) {
        p->sums_for[0] = needs_sums(&l->m[M_K]) ? &l->m[M_K] : &l->m[M_V];
    }
    p->quantize = takes_q8(s, &l->m[M_Q]) || takes_q8(s, &l->m[M_K]) || takes_q8(s, &l->m[M_V]);
    run_rows(pool, norm_task, p);

    /* q, k, v: a bias is laid down first and the product added to it (b + dot, the same float as dot + b) */
    float *qkv_out[3] = {p->q, p->k, p->v};
    int widths[3] = {qdim, kvdim, kvdim};
    int biased = 0;
    for (int i = 0; i < 3; i++) {
        const float *bias = l->v[V_Q_BIAS + i];
        if (bias) {
            biased = 1;
        }
    }
    for (int i = 0; i < 3 && biased; i++) {
        const float *bias = l->v[V_Q_BIAS + i];
        for (int r = 0; r < rows; r++) {
            float *o = qkv_out[i] + (size_t) r * widths[i];
            if (bias) {
                memcpy(o, bias, (size_t) widths[i] * 4);
            } else {
                memset(o, 0, (size_t) widths[i] * 4); /* 0 + dot is dot */
            }
        }
    }
    p->count = 3;
    p->mm[0] = &l->m[M_Q];
    p->mm[1] = &l->m[M_K];
    p->mm[2] = &l->m[M_V];
    p->out[0] = p->q;
    p->out[1] = p->k;
    p->out[2] = p->v;
    p->ldo[0] = qdim;
    p->ldo[1] = kvdim;
    p->ldo[2] = kvdim;
    p->in = p->h;
    p->ldi = d;
    p->add = biased;
    run(pool, product_task, p);

    run(pool, attention_task, p);

    /* out (+)= att . o: the residual, if added, added to the finished product */
    p->count = 1;
    p->mm[0] = &l->m[M_O];
    p->out[0] = out;
    p->ldo[0] = d;
    p->in = p->att;
    p->ldi = qdim;
    p->add = add;
    p->quantize = takes_q8(s, &l->m[M_O]);
    if (needs_sums(&l->m[M_O]) || p->quantize) {
        run_rows(pool, prepare_task, p);
    }
    run(pool, product_task, p);
}

/* Layer `layer`'s MLP over the norm of p->x into out: added to what out holds if add, written over it if not. */
static void mlp_half(bfk_pool *pool, phase *p, int layer, float *out, int add) {
    bfk_stage *s = p->s;
    int d = s->hidden, inter = s->inter;
    const bfk_layer *l = &s->layer[layer];
    p->l = l;
    p->layer = layer;
    p->norm_slot = V_FFN_NORM;
    p->sums_for[0] = needs_sums(&l->m[M_GATE]) ? &l->m[M_GATE] : needs_sums(&l->m[M_UP]) ? &l->m[M_UP] : NULL;
    p->quantize = takes_q8(s, &l->m[M_GATE]) || takes_q8(s, &l->m[M_UP]);
    run_rows(pool, norm_task, p);
    run(pool, mlp_task, p);

    p->count = 1;
    p->mm[0] = &l->m[M_DOWN];
    p->out[0] = out;
    p->ldo[0] = d;
    p->in = p->act;
    p->ldi = inter;
    p->add = add;
    p->quantize = takes_q8(s, &l->m[M_DOWN]);
    if (needs_sums(&l->m[M_DOWN]) || p->quantize) {
        run_rows(pool, prepare_task, p);
    }
    run(pool, product_task, p);
}

int bfk_stage_forward(bfk_stage *s, bfk_pool *pool, float *x, int rows, const bfk_seq *seqs, int nseq,
                      const float *cos, const float *sin) {
    return bfk_stage_forward_layers(s, pool, x, rows, seqs, nseq, cos, sin, 0, s->layers);
}

/*
 * The stage's layers [first, end) only, each by the same code as in a whole call, so running them one call at a time
 * gives the same bits (per-layer snapshot hashes read x between the calls: docs/verified-execution.md).
 */
int bfk_stage_forward_layers(bfk_stage *s, bfk_pool *pool, float *x, int rows, const bfk_seq *seqs, int nseq,
                             const float *cos, const float *sin, int first, int end) {
    if (first < 0 || end > s->layers || first > end) {
        return -2;
    }
    phase p = {0};
    if (begin(s, pool, x, rows, seqs, nseq, cos, sin, &p)) {
        return -1;
    }
    for (int layer = first; layer < end; layer++) {
        attention_half(pool, &p, layer, x, 1);
        mlp_half(pool, &p, layer, x, 1);
    }
    return 0;
}

/*
 * One half of layer `layer` over x [rows, hidden] (not changed), without the residual: the attention's output
 * projection (mlp 0; the step's keys and values written into the caches) or the MLP's down projection (mlp 1; seqs,
 * cos and sin unused) into out [rows, hidden]. The same operations as bfk_stage_forward's half, so the same bits.
 * Returns 0, or -1 if memory ran out.
 */
int bfk_stage_half(bfk_stage *s, bfk_pool *pool, int layer, int mlp, const float *x, int rows, const bfk_seq *seqs,
                   int nseq, const float *cos, const float *sin, float *out) {
    phase p = {0};
    if (layer < 0 || layer >= s->layers || begin(s, pool, (float *) x, rows, seqs, nseq, cos, sin, &p)) {
        return -1;
    }
    if (mlp) {
        mlp_half(pool, &p, layer, out, 0);
    } else {
        attention_half(pool, &p, layer, out, 0);
    }
    return 0;
}

/* ------------------------------------------------------------------ products for the head */

typedef struct {
    const bfk_matrix *w;
    const float *x;
    int rows;
    const float *sums;
    int lds;
    const uint8_t *qx; /* the rows in 8 bits, or NULL */
    size_t ldq;
    float *out;
    atomic_int next;
} head_phase;

static void head_task(void *arg, int ith, int nth) {
    head_phase *p = arg;
    int lo, hi, chunk = chunk_size(p->w->rows, nth);
    while (claim(&p->next, p->w->rows, chunk, &lo, &hi)) {
        if (p->qx) {
            bfk_matmul_q8_range(p->w, p->qx, p->ldq, p->rows, p->out, p->w->rows, lo, hi, 0);
        } else {
            bfk_matmul_range(p->w, p->x, p->w->cols, p->rows, p->sums, p->lds, p->out, p->w->rows, lo, hi, 0);
        }
    }
}

/*
 * out [rows, w.rows] = x [rows, w.cols] . w^T, from x rounded to 8 bits if q8_activations and w's type takes them.
 * Returns 0, or -1 if memory ran out.
 */
int bfk_product(bfk_pool *pool, const bfk_matrix *w, const float *x, int rows, int q8_activations, float *out) {
    int q8 = q8_activations && bfk_q8_supported(w->type);
    int per_row = q8 ? 0 : bfk_row_sums_floats(w->type, w->cols);
    head_phase p = {w, x, rows, NULL, per_row, NULL, 0, out, 0};
    void *prepared = NULL;
    if (q8) {
        p.ldq = bfk_q8_row_bytes(w->cols);
        prepared = malloc((size_t) rows * p.ldq);
        if (!prepared) {
            return -1;
        }
        for (int r = 0; r < rows; r++) {
            bfk_quantize_q8(x + (size_t) r * w->cols, w->cols, (uint8_t *) prepared + (size_t) r * p.ldq);
        }
        p.qx = prepared;
    } else if (per_row > 0) {
        prepared = malloc((size_t) rows * per_row * 4);
        if (!prepared) {
            return -1;
        }
        for (int r = 0; r < rows; r++) {
            bfk_row_sums(w->type, x + (size_t) r * w->cols, w->cols, (float *) prepared + (size_t) r * per_row);
        }
        p.sums = prepared;
    }
    bfk_pool_run(pool, head_task, &p);
    free(prepared);
    return 0;
}
