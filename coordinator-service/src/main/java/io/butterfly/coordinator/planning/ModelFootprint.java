package io.butterfly.coordinator.planning;

import java.util.Arrays;

/**
 * The memory a model needs once loaded (docs/initialization-and-bootstrap.md §5.1): per transformer layer
 * (its weights as held in memory plus its KV cache), the embedding (first stage only), the final norm
 * and LM head (last stage only), and a fixed headroom every stage needs for activations and scratch.
 *
 * @param layerBytes         bytes of each layer, index = layer number
 * @param embeddingBytes     bytes of the token (and position) embedding
 * @param headBytes          bytes of the final norm and LM head
 * @param stageOverheadBytes activation headroom of one stage, whatever its range
 * @param kvBytesPerLayer    the part of each layer's bytes that is its KV cache (the rest is weights)
 */
public record ModelFootprint(long[] layerBytes, long embeddingBytes, long headBytes, long stageOverheadBytes,
                             long kvBytesPerLayer) {

    public ModelFootprint {
        if (layerBytes == null || layerBytes.length == 0) {
            throw new IllegalArgumentException("numLayers must be positive, got 0");
        }
        layerBytes = layerBytes.clone();
        for (long b : layerBytes) {
            if (b < 0) {
                throw new IllegalArgumentException("layer bytes must not be negative, got " + b);
            }
        }
        if (embeddingBytes < 0 || headBytes < 0 || stageOverheadBytes < 0) {
            throw new IllegalArgumentException("embedding, head and overhead bytes must not be negative");
        }
        for (long b : layerBytes) {
            if (kvBytesPerLayer < 0 || kvBytesPerLayer > b) {
                throw new IllegalArgumentException("a layer's KV cache (" + kvBytesPerLayer + " B) must be within its "
                        + b + " B");
            }
        }
    }

    /** Without a KV cache: every byte of a layer is weights. */
    public ModelFootprint(long[] layerBytes, long embeddingBytes, long headBytes, long stageOverheadBytes) {
        this(layerBytes, embeddingBytes, headBytes, stageOverheadBytes, 0);
    }

    /** {@code numLayers} layers of {@code bytesPerLayer} each and nothing else (0 = memory is not considered). */
    public static ModelFootprint uniform(int numLayers, long bytesPerLayer) {
        if (numLayers <= 0) {
            throw new IllegalArgumentException("numLayers must be positive, got " + numLayers);
        }
        long[] layers = new long[numLayers];
        Arrays.fill(layers, bytesPerLayer);
        return new ModelFootprint(layers, 0, 0, 0);
    }

    public int numLayers() {
        return layerBytes.length;
    }

    /** Memory of the stage holding layers {@code [start, end)}, with the embedding/head if it is at an end. */
    public long stageBytes(int start, int end) {
        long sum = stageOverheadBytes;
        for (int l = start; l < end; l++) {
            sum += layerBytes[l];
        }
        if (start == 0) {
            sum += embeddingBytes;
        }
        if (end == layerBytes.length) {
            sum += headBytes;
        }
        return sum;
    }

    /** What the whole model needs when split over {@code stages} stages (each pays the headroom once). */
    public long totalBytes(int stages) {
        long sum = embeddingBytes + headBytes + stageOverheadBytes * Math.max(1, stages);
        for (long b : layerBytes) {
            sum += b;
        }
        return sum;
    }

    /** Bytes of layer {@code l}'s weights (without its KV cache). */
    public long layerWeightBytes(int l) {
        return layerBytes[l] - kvBytesPerLayer;
    }

    /** Whether no memory figure is known at all (then memory cannot constrain a plan). */
    public boolean weightless() {
        return totalBytes(1) == 0;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ModelFootprint f && Arrays.equals(layerBytes, f.layerBytes)
                && embeddingBytes == f.embeddingBytes && headBytes == f.headBytes
                && stageOverheadBytes == f.stageOverheadBytes && kvBytesPerLayer == f.kvBytesPerLayer;
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(layerBytes) * 31 + Long.hashCode(embeddingBytes + 7 * headBytes + 13 * stageOverheadBytes
                + 17 * kvBytesPerLayer);
    }

    @Override
    public String toString() {
        return "ModelFootprint[layers=" + layerBytes.length + ", total=" + totalBytes(1) + " B]";
    }
}
