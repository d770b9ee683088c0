package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.butterfly.common.model.RopeScaling;

/**
 * Llama rotary position embedding, Hugging Face {@code rotate_half} convention:
 * {@code x * cos + rotate_half(x) * sin} with {@code rotate_half([x1, x2]) = [-x2, x1]},
 * {@code inv_freq[j] = 1 / theta^(2j/d)} (then scaled as the config's {@code rope_scaling} says) and
 * {@code cos = cos(cat(freqs, freqs))}.
 *
 * <p>The tables for a step's positions are computed in Java in float32 the way transformers does
 * (float32 inverse frequencies, float32 position products), once per step for all layers; llama.py rotates with them.
 * The sign of {@code rotate_half} is folded into the sine table ({@code [-sin, sin]}) so that the rotation is a swap
 * of halves and a multiply: {@code (-x2) * s} and {@code x2 * (-s)} are the same float.
 */
final class RotaryEmbedding {

    private final float[] invFreq;
    private final int headDim;

    RotaryEmbedding(int headDim, double theta, RopeScaling scaling) {
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException("rotary embeddings need an even head dimension, got " + headDim);
        }
        this.headDim = headDim;
        float[] plain = new float[headDim / 2];
        for (int j = 0; j < plain.length; j++) {
            float exponent = (float) (2 * j) / (float) headDim;
            plain[j] = 1.0f / (float) Math.pow(theta, exponent);
        }
        this.invFreq = scaling == null ? plain : scaling.apply(plain);
    }

    /** Cosine and signed sine tables {@code [N, 1, headDim]} for the given absolute positions. */
    Tables tables(NDManager manager, long[] positions) {
        int half = headDim / 2;
        float[] cos = new float[positions.length * headDim];
        float[] sin = new float[positions.length * headDim];
        for (int t = 0; t < positions.length; t++) {
            float p = (float) positions[t];
            int row = t * headDim;
            for (int j = 0; j < half; j++) {
                float angle = p * invFreq[j];
                float c = (float) Math.cos(angle);
                float s = (float) Math.sin(angle);
                cos[row + j] = c;
                cos[row + half + j] = c;
                sin[row + j] = -s;
                sin[row + half + j] = s;
            }
        }
        Shape shape = new Shape(positions.length, 1, headDim);
        return new Tables(manager.create(cos, shape), manager.create(sin, shape));
    }

    /** The tables of one step, {@code [rows, 1, headDim]} each. */
    record Tables(NDArray cos, NDArray signedSin) {
    }
}
