package io.butterfly.worker.engine;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * What a stage was fed and what it sent on, for each cached position of one sequence: a key of the input row (the
 * token id, or a hash of the hidden state's bytes, see {@link InputKeys}) and, on a stage before the last, the hidden
 * state it sent downstream ({@code KvCacheSizing.sentBytesPerPosition} per position, counted with the KV cache).
 *
 * <p>Why: after a stage fails, the engine replays each paused sequence's history through the whole pipeline, cut as
 * the first time. A stage that kept its KV cache and sees the same inputs again answers those steps from here without
 * computing, so that only the stages that lost the cache compute the history again, and what they send on is what
 * the first pass sent, bit for bit. Positions grow and shrink with the sequence's {@link SequenceCache}.
 */
final class SentRows {

    /** Bytes of one sent row: {@code hidden * 4}, or 0 on the last stage (it sends logits, computed anew). */
    private final int rowBytes;
    private long[] keys = new long[0];
    private byte[] rows = new byte[0];

    SentRows(int rowBytes) {
        this.rowBytes = rowBytes;
    }

    /** Makes room for {@code capacity} positions, keeping those recorded. */
    void grow(int capacity) {
        if (capacity > keys.length) {
            keys = Arrays.copyOf(keys, capacity);
            rows = Arrays.copyOf(rows, Math.multiplyExact(capacity, rowBytes));
        }
    }

    /** Whether positions {@code [position, position + n)} were fed the inputs with keys {@code inputKeys[from, from + n)}. */
    boolean fedAlike(int position, long[] inputKeys, int from, int n) {
        return Arrays.equals(keys, position, position + n, inputKeys, from, from + n);
    }

    /**
     * Records positions {@code [position, position + n)}: their input keys and the rows sent for them, read from
     * {@code sent} at its position (absent on the last stage). Needs capacity for them.
     */
    void record(int position, long[] inputKeys, int from, int n, ByteBuffer sent) {
        System.arraycopy(inputKeys, from, keys, position, n);
        if (rowBytes > 0) {
            sent.duplicate().get(rows, position * rowBytes, n * rowBytes);
        }
    }

    /** Writes the rows sent for positions {@code [position, position + n)} into {@code into}, advancing it. */
    void copySent(int position, int n, ByteBuffer into) {
        into.put(rows, position * rowBytes, n * rowBytes);
    }

    /** The input keys of positions {@code [position, position + n)}. */
    long[] keys(int position, int n) {
        return Arrays.copyOfRange(keys, position, position + n);
    }

    /** The rows sent for positions {@code [position, position + n)} (empty on the last stage). */
    byte[] rows(int position, int n) {
        return Arrays.copyOfRange(rows, position * rowBytes, (position + n) * rowBytes);
    }
}
