package io.butterfly.coordinator.config;

import java.nio.file.Path;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * {@code butterfly.coordinator.jobs.*}: batch jobs and their JOBS listener (docs/jobs.md).
 *
 * @param enabled         whether the coordinator opens the JOBS port (off by default: a port is opened on purpose);
 *                        job definitions over REST work either way
 * @param host            the address the JOBS port binds
 * @param port            the JOBS port (0: any free one)
 * @param plaintext       serve JOBS without TLS even when the cluster's TLS is on (trusted networks only)
 * @param datasetDir      the dataset store; default {@code <data-dir>/jobs-datasets}. Replicas that share it read
 *                        each other's datasets
 * @param maxFrameBytes   the largest frame payload a client may send (a RESULT); a larger one is refused from its header
 * @param maxDatasetBytes the largest dataset accepted (413 beyond)
 * @param maxBatchSize    the largest batch size a job may have
 * @param maxResultBytes  the RESULT bytes the control log keeps for a job defined here (its {@code max_result_bytes},
 *                        RESULTS_FULL beyond)
 * @param lease           how long a client has to send a batch's RESULT before the batch goes to the next request
 * @param commitThreads   threads committing hand-outs and results to the control log (each commit blocks one)
 */
@ConfigurationProperties("butterfly.coordinator.jobs")
public record JobsProperties(
        @DefaultValue("false") boolean enabled,
        @DefaultValue("0.0.0.0") String host,
        @DefaultValue("7470") int port,
        @DefaultValue("false") boolean plaintext,
        Path datasetDir,
        @DefaultValue("1MB") DataSize maxFrameBytes,
        @DefaultValue("64MB") DataSize maxDatasetBytes,
        @DefaultValue("256") int maxBatchSize,
        @DefaultValue("64MB") DataSize maxResultBytes,
        @DefaultValue("10m") Duration lease,
        @DefaultValue("4") int commitThreads) {

    public JobsProperties {
        if (maxFrameBytes.toBytes() < 64 || maxFrameBytes.toBytes() > MAX_FRAME_BYTES) {
            // a RESULT becomes one control-log entry, which must fit the log's write buffer
            throw new IllegalArgumentException("butterfly.coordinator.jobs.max-frame-bytes must be in [64 B, 2 MB]");
        }
        if (maxResultBytes.toBytes() < 1 || lease.isNegative() || lease.isZero() || commitThreads < 1) {
            throw new IllegalArgumentException("butterfly.coordinator.jobs.max-result-bytes, lease and commit-threads"
                    + " must be positive");
        }
        if (maxBatchSize < 1) {
            throw new IllegalArgumentException("butterfly.coordinator.jobs.max-batch-size must be >= 1");
        }
    }

    /**
     * The largest max-frame-bytes: a RESULT becomes one control-log entry, and Ratis sends entries in batches of at
     * most 4 MB (its appender's byte limit) and writes none larger than its write buffer.
     */
    public static final long MAX_FRAME_BYTES = 2L << 20;

    public Path datasetDir(Path dataDir) {
        return datasetDir != null ? datasetDir : dataDir.resolve("jobs-datasets");
    }
}
