package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.nn.core.Linear;

/**
 * An affine projection {@code x W + b}, with W kept in whichever memory layout libtorch's CPU kernels
 * read fastest for its shape.
 *
 * <p>Decode multiplies one row by every weight matrix, so it is bound by how fast the kernel streams
 * the weights. Measured with DJL 0.35.1 / libtorch 2.7.1 (one row, weights not in cache): contiguous
 * {@code [in, out]} is faster when {@code in <= out} (768x2304: 297 vs 424 us; 768x4096: 509 vs 751 us;
 * the 768x32000 head: 3.9 vs 6.3 ms), the Hugging Face {@code [out, in]} layout when {@code in > out}
 * (2048x768: 286 vs 342 us). {@code linear} receives an {@code [out, in]} view either way (made once
 * here), which keeps the bias fused into the same call.
 */
final class Projection {

    private final NDArray inOut;
    private final NDArray outIn;
    private final NDArray bias;

    private Projection(NDArray inOut, NDArray outIn, NDArray bias) {
        this.inOut = inOut;
        this.outIn = outIn;
        this.bias = bias;
    }

    /** @param inOut weights {@code [in, out]}, contiguous; @param bias {@code [out]} or null */
    static Projection ofInOut(NDArray inOut, NDArray bias) {
        return new Projection(inOut, inOut.transpose(), bias);
    }

    /**
     * Loads a weight matrix in the layout that suits its shape.
     *
     * @param storedInOut whether the checkpoint stores it {@code [in, out]} (GPT-2 Conv1D) rather than
     *                    {@code [out, in]} (nn.Linear)
     */
    static Projection load(WeightStore w, String name, long in, long out, boolean storedInOut, NDArray bias) {
        if (in <= out) {
            return ofInOut(storedInOut ? w.load(name, in, out) : w.loadTransposed(name, out, in), bias);
        }
        return new Projection(null, storedInOut ? w.loadTransposed(name, in, out) : w.load(name, out, in), bias);
    }

    NDArray apply(NDArray x) {
        return (bias == null ? Linear.linear(x, outIn) : Linear.linear(x, outIn, bias)).singletonOrThrow();
    }

    /** The {@code [in, out]} matrix, or null when kept {@code [out, in]}. */
    NDArray inOut() {
        return inOut;
    }
}
