package io.butterfly.worker.partition;

import io.butterfly.common.manifest.VerifiedFile;
import io.butterfly.common.manifest.ManifestFile;
import java.util.List;

/**
 * What the engine loaded for the current partition: the manifest entries and the local files it read,
 * each with the SHA-256 computed over its bytes when it was verified just before the load, in manifest
 * order ({@code verified.get(i)} holds {@code files.get(i)}).
 */
public record LoadedPartition(Assignment assignment, List<ManifestFile> files, List<VerifiedFile> verified) {

    public LoadedPartition {
        files = List.copyOf(files);
        verified = List.copyOf(verified);
        if (files.size() != verified.size()) {
            throw new IllegalArgumentException(files.size() + " files but " + verified.size() + " verified files");
        }
    }
}
