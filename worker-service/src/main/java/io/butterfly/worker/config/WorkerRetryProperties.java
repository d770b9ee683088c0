package io.butterfly.worker.config;

import io.butterfly.common.error.RetryPolicy;
import io.butterfly.common.error.RetrySettings;
import io.butterfly.common.transfer.ShardDownloader;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How the worker retries its calls to other services (docs/architecture.md, "Retries"): the one place their attempts
 * and waits are set. Every retry runs on Resilience4j's Retry ({@code io.butterfly.common.retry.Retries}); waits double
 * from the first up to the cap.
 *
 * @param reportAttempts            tries of a load report in all, each at the next coordinator replica
 * @param reportFirstWait           the wait before a load report's first retry
 * @param reportMaxWait             the cap on a load report's wait
 * @param downloadRefetches         retries of a shard stream after corrupted data before CHECKSUM_MISMATCH
 * @param downloadTransientRetries  retries in a row, without a verified byte gained, while the registry is unreachable
 * @param downloadFirstWait         the wait before a download's first retry (equal jitter)
 * @param downloadMaxWait           the cap on a download's wait
 * @param joinFirstWait             the wait before the discovery join's first retry, when discovery suggests none
 *                                  (the join is retried until admitted or refused for good)
 * @param joinMaxWait               the cap on the join's wait (before up to half again of jitter)
 */
@ConfigurationProperties("butterfly.worker.retry")
public record WorkerRetryProperties(
        @DefaultValue("5") int reportAttempts,
        @DefaultValue("200ms") Duration reportFirstWait,
        @DefaultValue("3200ms") Duration reportMaxWait,
        @DefaultValue("2") int downloadRefetches,
        @DefaultValue("8") int downloadTransientRetries,
        @DefaultValue("200ms") Duration downloadFirstWait,
        @DefaultValue("5s") Duration downloadMaxWait,
        @DefaultValue("200ms") Duration joinFirstWait,
        @DefaultValue("5s") Duration joinMaxWait) {

    public RetrySettings report() {
        return new RetrySettings(reportAttempts, reportFirstWait, reportMaxWait);
    }

    public ShardDownloader.RetryPolicy download() {
        return new ShardDownloader.RetryPolicy(downloadRefetches, downloadTransientRetries, downloadFirstWait,
                downloadMaxWait);
    }

    public RetryPolicy join() {
        return new RetryPolicy(joinFirstWait.toMillis(), joinMaxWait.toMillis());
    }
}
