package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.norm.LayerNorm;

/**
 * Tensor operations with Hugging Face semantics, in float32. Scalars are 0-dim tensors created once
 * ({@link Scalars}): an op with a Java number makes DJL allocate a tensor for it on every call.
 */
final class Ops {

    private static final int[] LAST_AXIS = {-1};

    private Ops() {
    }

    /** Per-stage 0-dim float32 constants on the stage's device. */
    record Scalars(NDArray normEps, NDArray attentionScale, NDArray one, NDArray half, NDArray geluCoefficient,
                   NDArray geluScale) {

        static Scalars create(NDManager manager, double normEps, int headDim) {
            return new Scalars(manager.create((float) normEps), manager.create((float) (1.0 / Math.sqrt(headDim))),
                    manager.create(1f), manager.create(0.5f), manager.create(0.044715f),
                    manager.create((float) Math.sqrt(2.0 / Math.PI)));
        }
    }

    /** Llama RMSNorm: {@code w * (x / sqrt(mean(x^2) + eps))} over the last axis. */
    static NDArray rmsNorm(NDArray x, NDArray w, Scalars s) {
        NDArray rms = x.square().mean(LAST_AXIS, true).add(s.normEps()).sqrt();
        return x.div(rms).mul(w);
    }

    static NDArray layerNorm(NDArray x, NDArray gamma, NDArray beta, float eps) {
        return LayerNorm.layerNorm(x, new Shape(gamma.getShape().get(0)), gamma, beta, eps).singletonOrThrow();
    }

    /**
     * {@code silu(gate) * up = gate / (1 + exp(-gate)) * up}, as torch's silu kernel computes it. Not with torch's
     * sigmoid: its kernel takes a scalar formula (another exp) for the elements past the last full vector of each
     * thread's share of the tensor, so an element's bits depended on where the threads cut the batch; exp rounds
     * every element alike.
     */
    static NDArray siluGate(NDArray gate, NDArray up, Scalars s) {
        return gate.div(gate.neg().exp().add(s.one())).mul(up);
    }

    /** GPT-2 "gelu_new": {@code 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))}; x^3 as x*x*x like torch.pow(x, 3). */
    static NDArray geluTanh(NDArray x, Scalars s) {
        NDArray inner = x.mul(x).mul(x).mul(s.geluCoefficient()).add(x).mul(s.geluScale()).tanh();
        return x.mul(s.half()).mul(inner.add(s.one()));
    }
}
