package io.butterfly.coordinator.jobs;

import java.util.List;
import java.util.Optional;

/** Where a replica reads a job's dataset by its SHA-256 (docs/jobs.md: the dataset store). */
public interface Datasets {

    /** The dataset's lines, or empty if this replica does not hold it. */
    Optional<List<DatasetEntry>> entries(String sha256);
}
