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
import java.util.Map;

/**
 * SHA-256 of every fixed-size block of a model's stored files, recorded when the files are committed,
 * so the registry can check each block as it reads it and never forward bytes that changed on disk
 * (a whole-file check would only notice after the bytes were sent).
 *
 * @param blockBytes size of every block but a file's last
 * @param files      per file name, the blocks' SHA-256 (lowercase hex) in order
 */
public record BlockIndex(int blockBytes, Map<String, List<String>> files) {

    public static final int DEFAULT_BLOCK_BYTES = 1 << 20;

    public static List<String> hashBlocks(Path file, int blockBytes) throws IOException {
        List<String> hashes = new ArrayList<>();
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
                hashes.add(Sha256.hex(Arrays.copyOf(buf.array(), buf.position())));
                position += buf.position();
            }
        }
        return hashes;
    }
}
