package io.butterfly.coordinator.cluster;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A batch job as the control log holds it (docs/jobs.md): what every replica needs to regenerate any of its batches,
 * and no more. The dataset's bytes are named by their SHA-256 only; each replica reads them from the dataset store.
 *
 * @param id            the job's name, chosen by the operator ([a-z0-9-], at most 64)
 * @param datasetSha256 the dataset's SHA-256, lower-case hex
 * @param samples       the dataset's number of samples (its lines)
 * @param batchSize     samples per batch: a JOB_REQUEST at position p gets [p, p + batchSize)
 * @param seed          the base seed; a JOB_REQUEST names the job by it (unique among jobs)
 * @param maxTokens     tokens generated per sample, at most
 * @param temperature   sampling temperature (0: greedy)
 * @param topP          nucleus mass in (0, 1]
 * @param topK          draw from the k most likely only (0: all)
 * @param definedAtMs   when it was defined
 * @param maxResultBytes the results the control log keeps for it, at most (docs/jobs.md: what is replicated); 0 in a
 *                       log written before it: {@link #DEFAULT_MAX_RESULT_BYTES}
 */
public record JobRecord(String id, String datasetSha256, long samples, int batchSize, long seed, int maxTokens,
                        double temperature, double topP, int topK, long definedAtMs, long maxResultBytes) {

    /** butterfly.coordinator.jobs.max-result-bytes' default. */
    public static final long DEFAULT_MAX_RESULT_BYTES = 64L << 20;

    private static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9-]{0,63}");
    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");

    public JobRecord(String id, String datasetSha256, long samples, int batchSize, long seed, int maxTokens,
                     double temperature, double topP, int topK, long definedAtMs) {
        this(id, datasetSha256, samples, batchSize, seed, maxTokens, temperature, topP, topK, definedAtMs,
                DEFAULT_MAX_RESULT_BYTES);
    }

    public JobRecord {
        maxResultBytes = maxResultBytes <= 0 ? DEFAULT_MAX_RESULT_BYTES : maxResultBytes;
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(datasetSha256, "datasetSha256");
        if (!ID.matcher(id).matches()) {
            throw new IllegalArgumentException("job id must match " + ID + ", got " + id);
        }
        if (!SHA256.matcher(datasetSha256).matches()) {
            throw new IllegalArgumentException("dataset_sha256 must be 64 lower-case hex digits, got " + datasetSha256);
        }
        if (samples < 1 || batchSize < 1 || maxTokens < 1 || topK < 0) {
            throw new IllegalArgumentException("a job needs samples, batch_size and max_tokens >= 1 and top_k >= 0");
        }
        if (!(temperature >= 0) || Double.isInfinite(temperature) || !(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("a job needs a finite temperature >= 0 and top_p in (0, 1]");
        }
    }
}
