package io.butterfly.common.model;

/**
 * How big a sequence's KV cache on a stage grows: the worker's caches allocate by this rule, and the coordinator's
 * scheduler reserves by it, so the two count the same bytes. Keys and values are float32; capacity grows by a
 * quarter, in multiples of {@value #GROWTH} positions, so that growth copies stay geometric and at most a quarter of
 * a cache is unused. Beside them a stage keeps, per position, what it needs to answer a replayed step without
 * computing it ({@link #sentBytesPerPosition}).
 */
public final class KvCacheSizing {

    public static final int GROWTH = 64;

    private KvCacheSizing() {
    }

    /**
     * The capacity a cache can reach while its sequence stays within {@code reservePositions}: it grows only when a
     * step reaches past its capacity, to at most a quarter more than that reach. A budget that counts this from the
     * first step never refuses the sequence later.
     */
    public static int reservedCapacity(int reservePositions, int maxPositions) {
        if (reservePositions <= 0) {
            return 0;
        }
        long bound = (long) reservePositions + (reservePositions + 3) / 4;
        return (int) Math.min(maxPositions, (bound + GROWTH - 1) / GROWTH * GROWTH);
    }

    /** The capacity a cache of {@code capacity} grows to for {@code positions} (a new cache: capacity 0). */
    public static int capacityFor(int capacity, int positions, int maxPositions) {
        if (positions <= capacity) {
            return capacity;
        }
        long wanted = Math.max(positions, (long) capacity + capacity / 4);
        return (int) Math.min(maxPositions, (wanted + GROWTH - 1) / GROWTH * GROWTH);
    }

    /** Float32 keys and values of one position on {@code layers} layers. */
    public static long bytesPerPosition(int layers, int kvHeads, int headDim) {
        return 2L * layers * kvHeads * headDim * Float.BYTES;
    }

    /**
     * What a stage keeps per position to answer a replayed step (the worker's {@code SentRows}): an 8-byte key of the
     * input and, on a stage before the last, the float32 hidden state it sent on.
     */
    public static long sentBytesPerPosition(int hiddenSize, boolean lastStage) {
        return Long.BYTES + (lastStage ? 0L : (long) hiddenSize * Float.BYTES);
    }

    /** Bytes one position of a sequence takes on a stage of {@code layers} layers: keys, values and what it sent. */
    public static long stageBytesPerPosition(ModelConfig c, int layers, boolean lastStage) {
        return bytesPerPosition(layers, c.numKvHeads(), c.headDim()) + sentBytesPerPosition(c.hiddenSize(), lastStage);
    }

    /** What a sequence that may reach {@code reservePositions} takes on a stage of {@code layers} layers of {@code c}. */
    public static long reservedBytes(ModelConfig c, int layers, boolean lastStage, int reservePositions) {
        return reservedCapacity(reservePositions, c.maxPositions()) * stageBytesPerPosition(c, layers, lastStage);
    }
}
