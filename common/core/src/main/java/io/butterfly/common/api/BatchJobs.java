package io.butterfly.common.api;

import java.util.List;

/** The coordinator's batch jobs, in the order they were defined ({@code GET /api/v1/jobs}). */
public record BatchJobs(List<BatchJob> jobs) {
}
