package io.butterfly.common.transfer;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdException;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import java.util.Map;
import java.util.Optional;

/**
 * zstd encoding of transfer chunks (docs/bootstrap-protocol.md §6.3). Chunks are checksummed before compression, so
 * the receiver verifies what it will write, whatever the wire encoding was.
 */
public final class ChunkCodec {

    /** The smallest chunk a registry serves, whatever a request asks (a message per byte would cost it dearly). */
    public static final int MIN_CHUNK_BYTES = 512;

    /** Feature flag bit for compression (docs/bootstrap-protocol.md §7.2 {@code feature_flags::COMPRESSION}). */
    public static final long FEATURE_COMPRESSION = 1L << 0;

    private ChunkCodec() {
    }

    /** The compressed chunk, or empty when compressing would not make it smaller (e.g. random weights). */
    public static Optional<byte[]> compress(byte[] raw, int level) {
        byte[] packed = Zstd.compress(raw, level);
        return packed.length < raw.length ? Optional.of(packed) : Optional.empty();
    }

    /**
     * Decompresses a chunk that claims {@code uncompressedSize} bytes, at most {@code maxSize} (the chunk size
     * asked, or what is left of the file if less: a claim is never trusted with a larger allocation); a malformed frame or
     * a size that does not match is a corrupt chunk (refetched like a checksum mismatch), never a crash.
     */
    public static byte[] decompress(byte[] packed, int uncompressedSize, long maxSize, String file, long offset) {
        if (uncompressedSize <= 0 || uncompressedSize > maxSize) {
            throw corrupt(file, offset, "claims " + uncompressedSize + " bytes uncompressed, at most " + maxSize
                    + " are expected");
        }
        try {
            byte[] raw = Zstd.decompress(packed, uncompressedSize);
            if (raw.length != uncompressedSize) {
                throw corrupt(file, offset, "decompressed to " + raw.length + " bytes, not the " + uncompressedSize
                        + " it claims");
            }
            return raw;
        } catch (ZstdException e) {
            throw corrupt(file, offset, "is not a valid zstd frame: " + e.getMessage());
        }
    }

    private static ButterflyException corrupt(String file, long offset, String why) {
        return new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.DATA_LOSS,
                "compressed chunk of " + file + " at offset " + offset + " " + why,
                Map.of("file", file, "offset", Long.toString(offset)), null);
    }
}
