package io.butterfly.common.tensor;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Head parallelism of Llama-family layers, computed in float32 from the formulas: a small model's layers run whole, and
 * with their slices ({@link HeadSlices}) spread over 1 to all-slices shards ({@link SliceTree#cut}) whose partials
 * arrive in seeded random orders. Every number of shards gives the same bits as one; the whole layer (one product per
 * output, no partial sums) differs from them only by float32 rounding.
 */
class HeadParallelLayerTest {

    private static final int HIDDEN = 48;
    private static final int HEADS = 8;
    private static final int KV_HEADS = 4;
    private static final int HEAD_DIM = HIDDEN / HEADS;
    private static final int INTERMEDIATE = 70; // not a multiple of the slices
    private static final int LAYERS = 2;
    private static final int VOCAB = 64;

    /** One layer's weights, {@code [out][in]}. */
    private record Layer(float[][] q, float[][] k, float[][] v, float[][] o, float[][] gate, float[][] up,
                         float[][] down, float[] norm1, float[] norm2) {
    }

    private static float[][] matrix(Random r, int rows, int cols) {
        float[][] m = new float[rows][cols];
        for (float[] row : m) {
            for (int i = 0; i < cols; i++) {
                row[i] = (float) (r.nextGaussian() / Math.sqrt(cols));
            }
        }
        return m;
    }

    private static float[] vector(Random r, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = 1f + (float) (0.1 * r.nextGaussian());
        }
        return v;
    }

    private static Layer layer(Random r) {
        int q = HEADS * HEAD_DIM;
        int kv = KV_HEADS * HEAD_DIM;
        return new Layer(matrix(r, q, HIDDEN), matrix(r, kv, HIDDEN), matrix(r, kv, HIDDEN), matrix(r, HIDDEN, q),
                matrix(r, INTERMEDIATE, HIDDEN), matrix(r, INTERMEDIATE, HIDDEN), matrix(r, HIDDEN, INTERMEDIATE),
                vector(r, HIDDEN), vector(r, HIDDEN));
    }

    private static float[] rmsNorm(float[] x, float[] w) {
        float ss = 0;
        for (float v : x) {
            ss += v * v;
        }
        float scale = (float) (1 / Math.sqrt(ss / x.length + 1e-5f));
        float[] y = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            y[i] = x[i] * scale * w[i];
        }
        return y;
    }

    /** Rows {@code [first, end)} of {@code w} times {@code x}, columns {@code [c0, c1)} of w against x[c0..c1). */
    private static float[] product(float[][] w, int first, int end, float[] x, int c0, int c1) {
        float[] y = new float[end - first];
        for (int r = first; r < end; r++) {
            float s = 0;
            for (int c = c0; c < c1; c++) {
                s += w[r][c] * x[c - c0];
            }
            y[r - first] = s;
        }
        return y;
    }

    private static void rope(float[] v, int offset, int position) {
        for (int i = 0; i < HEAD_DIM / 2; i++) {
            double angle = position / Math.pow(10000, 2.0 * i / HEAD_DIM);
            float c = (float) Math.cos(angle);
            float s = (float) Math.sin(angle);
            float a = v[offset + i];
            float b = v[offset + i + HEAD_DIM / 2];
            v[offset + i] = a * c - b * s;
            v[offset + i + HEAD_DIM / 2] = b * c + a * s;
        }
    }

    /**
     * Causal attention of query heads {@code heads} (with their key/value heads) over positions 0..t of the normed
     * inputs {@code xs}: the concatenated heads' outputs, {@code [heads.size() * headDim]} for position t.
     */
    private static float[] attend(Layer l, List<float[]> xs, int t, SliceTree.Range heads) {
        int group = HEADS / KV_HEADS;
        float[] out = new float[heads.size() * HEAD_DIM];
        for (int h = heads.first(); h < heads.end(); h++) {
            int kvh = h / group;
            float[] q = product(l.q(), h * HEAD_DIM, (h + 1) * HEAD_DIM, xs.get(t), 0, HIDDEN);
            rope(q, 0, t);
            float[] scores = new float[t + 1];
            float max = Float.NEGATIVE_INFINITY;
            List<float[]> values = new ArrayList<>();
            for (int p = 0; p <= t; p++) {
                float[] k = product(l.k(), kvh * HEAD_DIM, (kvh + 1) * HEAD_DIM, xs.get(p), 0, HIDDEN);
                rope(k, 0, p);
                values.add(product(l.v(), kvh * HEAD_DIM, (kvh + 1) * HEAD_DIM, xs.get(p), 0, HIDDEN));
                float s = 0;
                for (int i = 0; i < HEAD_DIM; i++) {
                    s += q[i] * k[i];
                }
                scores[p] = s / (float) Math.sqrt(HEAD_DIM);
                max = Math.max(max, scores[p]);
            }
            float sum = 0;
            for (int p = 0; p <= t; p++) {
                scores[p] = (float) Math.exp(scores[p] - max);
                sum += scores[p];
            }
            for (int p = 0; p <= t; p++) {
                for (int i = 0; i < HEAD_DIM; i++) {
                    out[(h - heads.first()) * HEAD_DIM + i] += scores[p] / sum * values.get(p)[i];
                }
            }
        }
        return out;
    }

    private static float silu(float x) {
        return x / (1 + (float) Math.exp(-x));
    }

    /** The MLP's activations of rows {@code [first, end)}: silu(gate x) * up x. */
    private static float[] activations(Layer l, float[] x, SliceTree.Range rows) {
        float[] g = product(l.gate(), rows.first(), rows.end(), x, 0, HIDDEN);
        float[] u = product(l.up(), rows.first(), rows.end(), x, 0, HIDDEN);
        for (int i = 0; i < g.length; i++) {
            g[i] = silu(g[i]) * u[i];
        }
        return g;
    }

    private static float[] add(float[] a, float[] b) {
        float[] s = a.clone();
        for (int i = 0; i < s.length; i++) {
            s[i] += b[i];
        }
        return s;
    }

    /** The hidden states after a layer, unsplit: each output one product over all its inputs. */
    private static List<float[]> whole(Layer l, List<float[]> xs) {
        List<float[]> normed = xs.stream().map(x -> rmsNorm(x, l.norm1())).toList();
        List<float[]> out = new ArrayList<>();
        for (int t = 0; t < xs.size(); t++) {
            float[] attn = attend(l, normed, t, new SliceTree.Range(0, HEADS));
            float[] h = add(xs.get(t), product(l.o(), 0, HIDDEN, attn, 0, HEADS * HEAD_DIM));
            float[] a = activations(l, rmsNorm(h, l.norm2()), new SliceTree.Range(0, INTERMEDIATE));
            out.add(add(h, product(l.down(), 0, HIDDEN, a, 0, INTERMEDIATE)));
        }
        return out;
    }

    /**
     * The hidden states after a layer whose slices are spread over {@code shards} workers: each worker's heads through
     * its columns of o_proj, summed over its slices by its subtree, merged in the order {@code random} picks; then the
     * same for the MLP.
     */
    private static List<float[]> sharded(Layer l, List<float[]> xs, int shards, Random random) {
        HeadSlices slices = new HeadSlices(HEADS, KV_HEADS, HEAD_DIM, INTERMEDIATE);
        SliceTree tree = new SliceTree(slices.slices());
        List<SliceTree.Range> cut = tree.cut(shards);
        List<float[]> normed = xs.stream().map(x -> rmsNorm(x, l.norm1())).toList();
        List<float[]> out = new ArrayList<>();
        for (int t = 0; t < xs.size(); t++) {
            int pos = t;
            float[] h = add(xs.get(t), merged(tree, cut, random, s -> {
                SliceTree.Range cols = slices.queryRows(s);
                float[] attn = attend(l, normed, pos, slices.queryHeads(s));
                return product(l.o(), 0, HIDDEN, attn, cols.first(), cols.end());
            }));
            float[] x2 = rmsNorm(h, l.norm2());
            out.add(add(h, merged(tree, cut, random, s -> {
                SliceTree.Range rows = slices.mlpRows(s);
                return product(l.down(), 0, HIDDEN, activations(l, x2, rows), rows.first(), rows.end());
            })));
        }
        return out;
    }

    private static float[] merged(SliceTree tree, List<SliceTree.Range> cut, Random random,
                                  java.util.function.IntFunction<float[]> partial) {
        List<float[]> sent = cut.stream().map(r -> tree.sum(r, partial)).toList();
        List<Integer> arrival = new ArrayList<>();
        for (int i = 0; i < cut.size(); i++) {
            arrival.add(i);
        }
        Collections.shuffle(arrival, random);
        SliceTree.Merge merge = tree.merge(cut, HIDDEN);
        arrival.forEach(i -> merge.add(i, sent.get(i)));
        return merge.result();
    }

    private static float[] logits(float[][] head, float[] x, float[] norm) {
        return product(head, 0, VOCAB, rmsNorm(x, norm), 0, HIDDEN);
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) {
            if (v[i] > v[best]) {
                best = i;
            }
        }
        return best;
    }

    @Test
    void anyNumberOfShardsGivesTheBitsOfOneAndTheWholeLayerWithinRounding() {
        Random weights = new Random(49);
        List<Layer> layers = new ArrayList<>();
        for (int i = 0; i < LAYERS; i++) {
            layers.add(layer(weights));
        }
        float[][] embed = matrix(weights, VOCAB, HIDDEN);
        for (float[] row : embed) {
            for (int i = 0; i < HIDDEN; i++) {
                row[i] *= (float) Math.sqrt(HIDDEN);
            }
        }
        float[][] head = matrix(weights, VOCAB, HIDDEN);
        float[] finalNorm = vector(weights, HIDDEN);
        Random arrival = new Random(4901);
        // Greedy decoding, recomputing the sequence each step: k = 1, 2, 3, 4 shards, and the whole layers.
        List<List<Integer>> tokens = new ArrayList<>();
        List<float[]> lastLogits = new ArrayList<>();
        double worst = 0;
        for (int k = 0; k <= KV_HEADS; k++) {
            List<Integer> seq = new ArrayList<>(List.of(3, 17, 42));
            float[] logits = null;
            for (int step = 0; step < 6; step++) {
                List<float[]> xs = seq.stream().map(id -> embed[id].clone()).toList();
                for (Layer l : layers) {
                    xs = k == 0 ? whole(l, xs) : sharded(l, xs, k, arrival);
                }
                logits = logits(head, xs.get(xs.size() - 1), finalNorm);
                seq.add(argmax(logits));
            }
            tokens.add(seq);
            lastLogits.add(logits);
        }
        for (int k = 2; k <= KV_HEADS; k++) {
            assertThat(tokens.get(k)).as("tokens with %d shards", k).isEqualTo(tokens.get(1));
            for (int i = 0; i < VOCAB; i++) {
                assertThat(Float.floatToIntBits(lastLogits.get(k)[i])).as("logit %d with %d shards", i, k)
                        .isEqualTo(Float.floatToIntBits(lastLogits.get(1)[i]));
            }
        }
        float max = 0;
        for (int i = 0; i < VOCAB; i++) {
            max = Math.max(max, Math.abs(lastLogits.get(0)[i]));
            worst = Math.max(worst, Math.abs(lastLogits.get(0)[i] - lastLogits.get(1)[i]));
        }
        assertThat(tokens.get(1)).as("sharded against whole layers").isEqualTo(tokens.get(0));
        assertThat(worst).as("largest logit difference, whole layers against sharded (largest logit %s)", max)
                .isLessThanOrEqualTo(1e-5 * Math.max(1, max));
    }

    @Test
    void slicesKeepQueryGroupsWithTheirKeyHeadAndShareTheMlpEvenly() {
        HeadSlices s = new HeadSlices(8, 4, 6, 70);
        assertThat(s.queryRows(1)).isEqualTo(new SliceTree.Range(12, 24));
        assertThat(s.keyRows(3)).isEqualTo(new SliceTree.Range(18, 24));
        assertThat(s.queryHeads(2)).isEqualTo(new SliceTree.Range(4, 6));
        assertThat(List.of(s.mlpRows(0), s.mlpRows(1), s.mlpRows(2), s.mlpRows(3))).containsExactly(
                new SliceTree.Range(0, 18), new SliceTree.Range(18, 36), new SliceTree.Range(36, 53),
                new SliceTree.Range(53, 70));
    }
}
