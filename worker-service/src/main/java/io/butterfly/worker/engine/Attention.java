package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;

/**
 * Causal scaled dot-product attention over each sequence's cached and new keys, for a packed batch.
 *
 * <p>Grouped-query attention without copying keys: query head h uses kv head {@code h / group} (as
 * Hugging Face's {@code repeat_kv}), so queries {@code [heads, n, d]} are viewed as
 * {@code [kvHeads, group * n, d]} and multiplied by each kv head's keys directly. Scores span the
 * cache's whole capacity, the mask hiding positions after each token (see {@link SequenceCache}). For
 * one new token (decode) every transpose is a reshape of the same memory, so none is issued.
 */
final class Attention {

    private Attention() {
    }

    /**
     * @param q     {@code [N, heads, headDim]}, already scaled by {@code 1/sqrt(headDim)}
     * @param k     {@code [N, kvHeads, headDim]} (rotated when the architecture rotates)
     * @param v     {@code [N, kvHeads, headDim]}
     * @param layer this stage's layer slot in each sequence's cache
     * @return {@code [N, heads * headDim]}, padding rows zero
     */
    static NDArray attend(NDArray q, NDArray k, NDArray v, StepBatch step, int layer) {
        long heads = q.getShape().get(1);
        long kvHeads = k.getShape().get(1);
        long headDim = q.getShape().get(2);
        long group = heads / kvHeads;
        // One split per array rather than a slice per sequence: a native call each.
        NDList qs = step.split(q);
        NDList ks = step.split(k);
        NDList vs = step.split(v);
        NDList outputs = new NDList(step.slices().size());
        for (int i = 0; i < step.slices().size(); i++) {
            StepBatch.Slice s = step.slices().get(i);
            int n = s.numTokens();
            NDArray qi = qs.get(i);
            NDArray ki = ks.get(i);
            NDArray vi = vs.get(i);
            NDArray scores;
            if (n == 1) {
                s.cache().write(layer, s.position(), ki.reshape(kvHeads, headDim, 1), vi.reshape(kvHeads, 1, headDim));
                scores = qi.reshape(kvHeads, group, headDim).matMul(s.cache().transposedKeys(layer)).add(step.causalMask(i));
            } else {
                s.cache().write(layer, s.position(), ki.transpose(1, 2, 0), vi.transpose(1, 0, 2));
                long capacity = s.cache().capacity();
                scores = qi.transpose(1, 0, 2).reshape(kvHeads, group * n, headDim).matMul(s.cache().transposedKeys(layer))
                        .reshape(kvHeads, group, n, capacity).add(step.causalMask(i)).reshape(kvHeads, group * n, capacity);
            }
            NDArray out = scores.softmax(-1).matMul(s.cache().values(layer));
            outputs.add(n == 1
                    ? out.reshape(1, heads * headDim)
                    : out.reshape(heads, n, headDim).transpose(1, 0, 2).reshape(n, heads * headDim));
        }
        return step.pack(outputs);
    }
}
