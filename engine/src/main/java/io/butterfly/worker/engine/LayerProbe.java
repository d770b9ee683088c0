package io.butterfly.worker.engine;

import java.nio.ByteBuffer;

/**
 * Sees the output of each of a stage's layers during one step, for per-layer snapshot hashes
 * (docs/verified-execution.md): a stage asked for them runs its layers one at a time, by the same kernel code as one
 * call over all of them (the same bits), and shows each layer's output here before the next layer reads it.
 */
public interface LayerProbe {

    /**
     * @param layer the layer's index in the stage (0: its first)
     * @param rows  its output, {@code [tokens of the step, hidden]} float32, little-endian, row-major, every chunk of
     *              the batch in batch order (a probed step computes every chunk whole, none answered from a cache);
     *              writable: what is written there is what the next layer reads (fault injection flips a bit in it)
     */
    void afterLayer(int layer, ByteBuffer rows);
}
