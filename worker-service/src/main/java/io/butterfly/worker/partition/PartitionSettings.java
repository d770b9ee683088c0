package io.butterfly.worker.partition;

import io.butterfly.worker.engine.ExecutorOptions;
import java.nio.file.Path;
import java.util.List;

/**
 * What this worker's partitions are loaded with.
 *
 * @param nodeId               this worker's id in the cluster
 * @param dataDir              downloaded shards live under here
 * @param trustedPublisherKeys hex Ed25519 keys whose signed manifests are accepted (none: every manifest is refused)
 * @param executor             where and how the partition runs, and the KV cache budget of all its sequences
 */
public record PartitionSettings(String nodeId, Path dataDir, List<String> trustedPublisherKeys, ExecutorOptions executor) {

    public PartitionSettings {
        trustedPublisherKeys = List.copyOf(trustedPublisherKeys);
    }
}
