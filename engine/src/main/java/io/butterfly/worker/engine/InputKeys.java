package io.butterfly.worker.engine;

import com.google.common.hash.HashFunction;
import com.google.common.hash.Hashing;
import java.nio.ByteBuffer;

/**
 * A key per input row of a step, equal for two rows exactly when they are (up to a 2^-64 accident) the same: the
 * token id, or a 64-bit Murmur3 hash of a hidden state's float32 bytes. {@link SentRows} compares them to tell a
 * replayed step from a new one.
 */
final class InputKeys {

    private static final HashFunction HASH = Hashing.murmur3_128();

    private InputKeys() {
    }

    static long[] of(StageInput input, int rows, int hiddenSize) {
        if (input instanceof StageInput.Tokens tokens) {
            return tokens.ids().clone();
        }
        ByteBuffer bytes = ((StageInput.Hidden) input).littleEndianFloats();
        int rowBytes = hiddenSize * Float.BYTES;
        long[] keys = new long[rows];
        for (int r = 0; r < rows; r++) {
            ByteBuffer row = bytes.duplicate();
            row.position(bytes.position() + r * rowBytes).limit(bytes.position() + (r + 1) * rowBytes);
            keys[r] = HASH.hashBytes(row).asLong();
        }
        return keys;
    }
}
