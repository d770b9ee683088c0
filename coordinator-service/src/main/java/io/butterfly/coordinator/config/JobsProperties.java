package io.butterfly.coordinator.config;

import java.nio.file.Path;
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
 * @param maxResultBytes  the RESULT bytes this replica keeps, all jobs together (RESULTS_FULL beyond)
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
        @DefaultValue("256MB") DataSize maxResultBytes) {

    public JobsProperties {
        if (maxFrameBytes.toBytes() < 64 || maxFrameBytes.toBytes() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("butterfly.coordinator.jobs.max-frame-bytes must be in [64 B, 2 GB)");
        }
        if (maxBatchSize < 1) {
            throw new IllegalArgumentException("butterfly.coordinator.jobs.max-batch-size must be >= 1");
        }
    }

    public Path datasetDir(Path dataDir) {
        return datasetDir != null ? datasetDir : dataDir.resolve("jobs-datasets");
    }
}
