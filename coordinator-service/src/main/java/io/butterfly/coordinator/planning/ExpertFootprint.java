package io.butterfly.coordinator.planning;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.MixtureOfExperts;
import java.util.Arrays;

/**
 * The routed experts of a mixture-of-experts model, for placing them in expert groups: how many each sparse layer has
 * and the bytes of all of them per layer, as the workers hold them (0 for a dense layer). A dense model has none.
 *
 * @param experts     routed experts per sparse layer (0: a dense model)
 * @param routedBytes bytes of all routed experts of each layer, index = layer number
 */
public record ExpertFootprint(int experts, long[] routedBytes) {

    public ExpertFootprint {
        if (experts < 0) {
            throw new IllegalArgumentException("experts must not be negative, got " + experts);
        }
        routedBytes = routedBytes == null ? new long[0] : routedBytes.clone();
    }

    /** A dense model: nothing to spread. */
    public static ExpertFootprint none() {
        return new ExpertFootprint(0, new long[0]);
    }

    /**
     * From the model's config: each sparse layer's experts are three projections {@code [expertSize, hidden]} at
     * {@code weightBytes} a parameter (the shards' bytes per parameter for a quantized model, approximately).
     */
    public static ExpertFootprint of(ModelConfig config, double weightBytes) {
        MixtureOfExperts moe = config.experts();
        if (moe == null) {
            return none();
        }
        long[] bytes = new long[config.numLayers()];
        for (int l = 0; l < bytes.length; l++) {
            if (moe.sparse(l)) {
                bytes[l] = (long) (3.0 * config.hiddenSize() * moe.expertSize() * moe.experts() * weightBytes);
            }
        }
        return new ExpertFootprint(moe.experts(), bytes);
    }

    /** Whether the model has routed experts to spread. */
    public boolean sparse() {
        return experts > 0;
    }

    /** Bytes of experts {@code [first, end)} of layers {@code [start, stop)}. */
    public long bytes(int start, int stop, int first, int end) {
        long sum = 0;
        for (int l = start; l < stop && l < routedBytes.length; l++) {
            sum += routedBytes[l] / experts * (end - first);
        }
        return sum;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ExpertFootprint f && experts == f.experts && Arrays.equals(routedBytes, f.routedBytes);
    }

    @Override
    public int hashCode() {
        return 31 * experts + Arrays.hashCode(routedBytes);
    }

    @Override
    public String toString() {
        return "ExpertFootprint[experts=" + experts + ", layers=" + routedBytes.length + "]";
    }
}
