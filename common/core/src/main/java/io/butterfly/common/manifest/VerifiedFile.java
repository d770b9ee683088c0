package io.butterfly.common.manifest;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import org.slf4j.LoggerFactory;

/**
 * A file on disk and the SHA-256 computed over its bytes as they were received and written (or, for a file already
 * present, read back), which matched its manifest entry.
 *
 * @param channel for a weight file used in place in the registry's shared store, the open channel its bytes were
 *                verified through: read it through this channel, not by path, and close it; null for a file in the
 *                download directory
 */
public record VerifiedFile(Path path, String sha256, long sizeBytes, FileChannel channel) {

    public VerifiedFile(Path path, String sha256, long sizeBytes) {
        this(path, sha256, sizeBytes, null);
    }

    /** Closes the channel of a file verified in place; nothing for a downloaded file. */
    public void closeChannel() {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException e) {
                LoggerFactory.getLogger(VerifiedFile.class).debug("closing {} failed", path, e);
            }
        }
    }
}
