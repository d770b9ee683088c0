package io.butterfly.registry.store;

import io.butterfly.common.hash.Sha256;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * A checksum of every fixed-size block of a model's stored files, recorded when the files are committed,
 * so the registry can check each block as it reads it and never forward bytes that changed on disk
 * (a whole-file check would only notice after the bytes were sent).
 *
 * <p>Blocks are checked with CRC32C: this guards the store against bit rot and truncation at memory
 * speed, where a SHA-256 per served byte cost the registry a core during a cold start. Integrity against
 * tampering is end to end: every receiver checks each file's SHA-256 against the signed manifest.
 *
 * @param blockBytes size of every block but a file's last
 * @param algorithm  {@value #CRC32C} or {@value #SHA256} (indexes written before CRC32C have none: SHA-256)
 * @param files      per file name, the blocks' checksums (lowercase hex) in order
 */
public record BlockIndex(int blockBytes, String algorithm, Map<String, List<String>> files) {

    public static final int DEFAULT_BLOCK_BYTES = 1 << 20;
    public static final String CRC32C = "crc32c";
    public static final String SHA256 = "sha256";

    public BlockIndex {
        if (blockBytes <= 0) {
            // Checked here, not only when writing: a stored index read back with 0 looped for ever over a file.
            throw new IllegalArgumentException("block size must be positive: " + blockBytes);
        }
        algorithm = algorithm == null ? SHA256 : algorithm.toLowerCase(Locale.ROOT);
        if (!algorithm.equals(CRC32C) && !algorithm.equals(SHA256)) {
            throw new IllegalArgumentException("unknown block checksum algorithm '" + algorithm + "'");
        }
    }

    /** The checksums of {@code file}'s blocks of {@code blockBytes}, under {@code algorithm}. */
    public static List<String> checksumBlocks(Path file, int blockBytes, String algorithm) throws IOException {
        List<String> sums = new ArrayList<>();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buf = ByteBuffer.allocate(blockBytes);
            long position = 0;
            long size = ch.size();
            while (position < size) {
                buf.clear();
                buf.limit((int) Math.min(blockBytes, size - position));
                while (buf.hasRemaining()) {
                    if (ch.read(buf, position + buf.position()) < 0) {
                        throw new IOException(file + " shrank while it was being indexed");
                    }
                }
                sums.add(checksum(algorithm, buf.array(), buf.position()));
                position += buf.position();
            }
        }
        return sums;
    }

    /** The checksum of a block's bytes under this index's algorithm. */
    public String checksum(byte[] block) {
        return checksum(algorithm, block, block.length);
    }

    private static String checksum(String algorithm, byte[] data, int length) {
        if (algorithm.equals(SHA256)) {
            return Sha256.hex(length == data.length ? data : Arrays.copyOf(data, length));
        }
        CRC32C crc = new CRC32C();
        crc.update(data, 0, length);
        return String.format(Locale.ROOT, "%08x", crc.getValue());
    }
}
