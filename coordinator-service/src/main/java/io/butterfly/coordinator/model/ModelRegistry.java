package io.butterfly.coordinator.model;

import io.butterfly.common.manifest.Manifest;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * The model registry, as the catalog uses it (gateway/registry implements it). A registry that cannot be reached
 * or does not answer in time is a {@link RegistryUnavailableException}.
 */
public interface ModelRegistry {

    /** The published manifest of {@code modelId}, as signed by its publisher; not verified yet. */
    Manifest manifest(String modelId);

    /** Downloads {@code files} of {@code manifest} into {@code dir}, each verified against the manifest. */
    void download(Manifest manifest, List<String> files, Path dir) throws IOException;
}
