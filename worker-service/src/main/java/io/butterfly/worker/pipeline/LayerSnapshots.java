package io.butterfly.worker.pipeline;

import io.butterfly.common.hash.Xxh64;
import io.butterfly.worker.engine.LayerProbe;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Per-layer snapshot hashes of one step (docs/verified-execution.md): after each of the stage's layers, the XXH64 of
 * each sequence's rows of its output, in batch order, so that two runs of a step that part can be told apart at the
 * first layer that computed differently. With fault injection at a layer, the bit is flipped there first (what the
 * next layer reads and what the hash shows).
 */
final class LayerSnapshots implements LayerProbe {

    private final int firstLayer;
    private final int[] tokensPerSequence;
    private final int rowBytes;
    private final boolean hashing;
    private final OutputCorruption corruption;
    private final List<StageHashes.Layer> layers = new ArrayList<>();

    /**
     * @param firstLayer        the model's index of the stage's first layer
     * @param tokensPerSequence the step's tokens of each sequence, in batch order
     * @param hidden            the hidden size
     * @param hashing           whether the layers' hashes are wanted
     * @param corruption        flips a bit at its layer's output ({@link OutputCorruption#layer()}), or null: none
     */
    LayerSnapshots(int firstLayer, int[] tokensPerSequence, int hidden, boolean hashing, OutputCorruption corruption) {
        this.firstLayer = firstLayer;
        this.tokensPerSequence = tokensPerSequence.clone();
        this.rowBytes = hidden * Float.BYTES;
        this.hashing = hashing;
        this.corruption = corruption;
    }

    @Override
    public void afterLayer(int layer, ByteBuffer rows) {
        if (corruption != null && layer == corruption.layer()) {
            corruption.flip(rows);
        }
        if (!hashing) {
            return;
        }
        long[] hashes = new long[tokensPerSequence.length];
        int row = 0;
        for (int i = 0; i < hashes.length; i++) {
            hashes[i] = Xxh64.of(rows, rows.position() + row * rowBytes, tokensPerSequence[i] * rowBytes);
            row += tokensPerSequence[i];
        }
        layers.add(new StageHashes.Layer(firstLayer + layer, hashes));
    }

    /** The layers' hashes so far, in layer order (none unless hashing). */
    List<StageHashes.Layer> layers() {
        return List.copyOf(layers);
    }
}
