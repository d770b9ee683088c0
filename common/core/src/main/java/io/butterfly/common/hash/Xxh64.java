package io.butterfly.common.hash;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HexFormat;
import net.jpountz.xxhash.XXHash64;
import net.jpountz.xxhash.XXHashFactory;

/**
 * XXH64 (seed 0) of bytes: the fast 64-bit hash of a pipeline step's inputs and outputs (docs/verified-execution.md).
 * Not a cryptographic hash: it tells a wrong computation or a flipped bit from the right one, not a forger who
 * aims for a collision; the weights are what SHA-256 and the signed manifest protect. lz4-java's pure-Java
 * implementation: the same value on every machine, no native library to load.
 */
public final class Xxh64 {

    private static final XXHash64 HASH = XXHashFactory.fastestJavaInstance().hash64();
    private static final HexFormat HEX = HexFormat.of();

    private Xxh64() {
    }

    /** Which of lz4-java's implementations hashes here (its pure-Java one with or without {@code sun.misc.Unsafe}). */
    public static String implementation() {
        return HASH.toString();
    }

    /** The hash of {@code length} bytes of {@code bytes} from absolute index {@code offset}; its position is kept. */
    public static long of(ByteBuffer bytes, int offset, int length) {
        return HASH.hash(bytes, offset, length, 0);
    }

    /** The hash of the bytes from position to limit. */
    public static long of(ByteBuffer bytes) {
        return of(bytes, bytes.position(), bytes.remaining());
    }

    public static long of(byte[] bytes) {
        return HASH.hash(bytes, 0, bytes.length, 0);
    }

    /** The hash of {@code count} int64 values from {@code offset}, as their little-endian bytes (a step's token ids). */
    public static long ofLongs(long[] values, int offset, int count) {
        ByteBuffer b = ByteBuffer.allocate(count * Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asLongBuffer().put(values, offset, count);
        return of(b.array());
    }

    /** As JSON and logs show a hash: 16 lowercase hex digits (a JSON number would lose bits past 2^53). */
    public static String hex(long hash) {
        return HEX.toHexDigits(hash);
    }
}
