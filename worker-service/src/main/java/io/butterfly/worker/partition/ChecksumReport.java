package io.butterfly.worker.partition;

import java.util.List;

/**
 * What this worker loaded, for cross-validation (docs/bootstrap-protocol.md §6.5): every file's SHA-256 as computed over
 * the bytes it loaded, and their Merkle root.
 *
 * @param weightHash  Merkle root over {@code files} in manifest order
 */
public record ChecksumReport(String nodeId, long epoch, int layerStart, int layerEnd, boolean hasEmbedding,
                             boolean hasHead, List<FileChecksum> files, String weightHash, long timestampMs) {

    /** One loaded file: its name, lowercase hex SHA-256 and size. */
    public record FileChecksum(String name, String sha256, long sizeBytes) {
    }
}
