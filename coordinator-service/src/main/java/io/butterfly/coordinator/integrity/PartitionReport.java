package io.butterfly.coordinator.integrity;

import java.util.List;

/**
 * A worker's ChecksumReport (docs/bootstrap-protocol.md §6.5): what it says it loaded, hashed by itself.
 *
 * @param weightHash Merkle root over {@code files}' digests, in the order given
 * @param files      per-file SHA-256 of the bytes loaded
 */
public record PartitionReport(String nodeId, int layerStart, int layerEnd, String weightHash, List<FileDigest> files) {

    public PartitionReport {
        files = List.copyOf(files);
    }

    public record FileDigest(String name, String sha256) {
    }
}
