package io.butterfly.worker.pipeline;

import io.butterfly.worker.engine.StageResult;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

/**
 * Fault injection for tests and demonstrations of verified execution (docs/verified-execution.md): flips one bit of
 * a chosen fraction of this stage's outputs, after computing and before hashing, as a faulty memory module or a
 * miscompiled kernel would: the stage reports the hash of what it wrongly computed, the next stage finds its input
 * intact, and only a second computation of the same step tells. Off unless the worker is started with
 * {@code butterfly.worker.unsafe-fault-injection.enabled=true} and a fraction above 0.
 */
public final class OutputCorruption {

    /** Corrupts nothing. */
    public static final OutputCorruption NONE = new OutputCorruption(0, 0);

    private final double fraction;
    private final SplittableRandom random;
    private final int layer;
    private long corrupted;

    /**
     * @param fraction of outputs to corrupt, in [0, 1]
     * @param seed     which outputs and bits: the same seed corrupts the same steps of the same run
     */
    public OutputCorruption(double fraction, long seed) {
        this(fraction, seed, -1);
    }

    /**
     * @param layer the stage's layer (0: its first) whose output gets the bit, inside the stage (the layers after it
     *              compute on it, and per-layer snapshot hashes show it from there); -1: the stage's output
     */
    public OutputCorruption(double fraction, long seed, int layer) {
        if (!(fraction >= 0 && fraction <= 1)) {
            throw new IllegalArgumentException("the fraction of outputs to corrupt must be in [0, 1], got " + fraction);
        }
        this.fraction = fraction;
        this.random = new SplittableRandom(seed);
        this.layer = layer;
    }

    /** The stage's layer whose output is corrupted, or -1: the stage's output ({@link #apply}). */
    public int layer() {
        return layer;
    }

    /** With a layer chosen: whether this step is one of the fraction corrupted (then {@link #flip} at that layer). */
    public synchronized boolean drawStep() {
        return layer >= 0 && fraction > 0 && random.nextDouble() < fraction;
    }

    /** Flips one bit of {@code rows} in place (a layer's output, for a step {@link #drawStep} chose). */
    public synchronized void flip(ByteBuffer rows) {
        int bytes = rows.remaining();
        if (bytes == 0) {
            return;
        }
        int at = rows.position() + random.nextInt(bytes);
        rows.put(at, (byte) (rows.get(at) ^ (1 << random.nextInt(8))));
        corrupted++;
    }

    public boolean active() {
        return fraction > 0;
    }

    /** The result, or (for the chosen fraction) a copy of it with one bit flipped. */
    public synchronized StageResult apply(StageResult result) {
        if (layer >= 0 || fraction == 0 || random.nextDouble() >= fraction) {
            return result; // a layer's output is corrupted inside the stage instead
        }
        ByteBuffer original = result.littleEndianFloats();
        int bytes = original.remaining();
        if (bytes == 0) {
            return result;
        }
        ByteBuffer copy = ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
        copy.put(original.duplicate()).flip();
        int at = random.nextInt(bytes);
        copy.put(at, (byte) (copy.get(at) ^ (1 << random.nextInt(8))));
        corrupted++;
        return new StageResult(copy, result.shape(), result.logits());
    }

    /** Outputs corrupted so far. */
    public synchronized long corrupted() {
        return corrupted;
    }
}
