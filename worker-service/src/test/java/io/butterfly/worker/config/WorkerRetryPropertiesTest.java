package io.butterfly.worker.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.error.RetrySettings;
import io.butterfly.common.transfer.ShardDownloader;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/** The worker's retries as its configuration binds them: the documented defaults, and each one settable. */
class WorkerRetryPropertiesTest {

    private static WorkerRetryProperties bind(Map<String, String> settings) {
        return new Binder(new MapConfigurationPropertySource(settings))
                .bindOrCreate("butterfly.worker.retry", WorkerRetryProperties.class);
    }

    @Test
    void theDefaultsAreTheDocumentedAttemptsAndWaits() {
        WorkerRetryProperties retry = bind(Map.of());
        assertThat(retry.report()).isEqualTo(new RetrySettings(5, Duration.ofMillis(200), Duration.ofMillis(3200)))
                .isEqualTo(io.butterfly.worker.gateway.CoordinatorGateway.REPORT_RETRY);
        assertThat(retry.download()).isEqualTo(ShardDownloader.RetryPolicy.DEFAULT);
        assertThat(retry.join()).isEqualTo(io.butterfly.common.discovery.DiscoveryMembership.JOIN_RETRY);
    }

    @Test
    void eachIsSetInOnePlace() {
        WorkerRetryProperties retry = bind(Map.of("butterfly.worker.retry.report-attempts", "3",
                "butterfly.worker.retry.download-max-wait", "1s", "butterfly.worker.retry.join-first-wait", "50ms"));
        assertThat(retry.report().maxAttempts()).isEqualTo(3);
        assertThat(retry.download().maxBackoff()).isEqualTo(Duration.ofSeconds(1));
        assertThat(retry.join().baseMillis()).isEqualTo(50);
    }
}
