package io.butterfly.worker.partition;

import io.butterfly.proto.registry.v1.WeightFile;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import java.nio.file.Path;
import java.util.List;

/**
 * What the engine loaded for the current partition: the manifest entries and the local files it read,
 * in manifest order ({@code paths.get(i)} holds {@code files.get(i)}).
 */
public record LoadedPartition(AssignPartitionRequest assignment, List<WeightFile> files, List<Path> paths) {

    public LoadedPartition {
        files = List.copyOf(files);
        paths = List.copyOf(paths);
        if (files.size() != paths.size()) {
            throw new IllegalArgumentException(files.size() + " files but " + paths.size() + " paths");
        }
    }
}
