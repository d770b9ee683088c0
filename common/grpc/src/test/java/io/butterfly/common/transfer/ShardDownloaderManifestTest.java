package io.butterfly.common.transfer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The manifest is asked like a file is fetched: retried while the registry is away, not when it says no. */
class ShardDownloaderManifestTest {

    private static final ShardDownloader.RetryPolicy TWO_RETRIES =
            new ShardDownloader.RetryPolicy(0, 2, Duration.ofMillis(1), Duration.ofMillis(2));

    @Test
    void aRegistryBrieflyAwayIsAskedAgain() throws Exception {
        try (FakeRegistry registry = new FakeRegistry((req, out) -> { }).file("a.safetensors", 10)) {
            registry.manifestOutages.set(2);
            ShardDownloader downloader = new ShardDownloader(registry.stub(), Duration.ofSeconds(5), 1000, TWO_RETRIES, 1);

            assertThat(downloader.manifest("tiny")).isEqualTo(registry.manifest());
            assertThat(registry.manifestCalls).hasValue(3);
        }
    }

    @Test
    void aRegistryAwayForLongerIsReportedUnavailableNamingTheModel() throws Exception {
        try (FakeRegistry registry = new FakeRegistry((req, out) -> { })) {
            registry.manifestOutages.set(100);
            ShardDownloader downloader = new ShardDownloader(registry.stub(), Duration.ofSeconds(5), 1000, TWO_RETRIES, 1);

            assertThatThrownBy(() -> downloader.manifest("tiny")).isInstanceOfSatisfying(ButterflyException.class, e -> {
                assertThat(e.kind()).isEqualTo(ErrorKind.UNAVAILABLE);
                assertThat(e.getMessage()).contains("manifest of model tiny", "3 attempts", "restarting");
            });
            assertThat(registry.manifestCalls).hasValue(3);
        }
    }

    @Test
    void anAnswerIsNotRetried() throws Exception {
        try (FakeRegistry registry = new FakeRegistry((req, out) -> { })) {
            ShardDownloader downloader = new ShardDownloader(registry.stub(), Duration.ofSeconds(5), 1000, TWO_RETRIES, 1);

            assertThatThrownBy(() -> downloader.manifest("other")).isInstanceOfSatisfying(StatusRuntimeException.class,
                    e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
            assertThat(registry.manifestCalls).hasValue(1);
        }
    }

    @Test
    void whileAnotherCallIsTheHalfOpenProbeTheManifestWaitsWithoutSpendingItsRetries() throws Exception {
        try (FakeRegistry registry = new FakeRegistry((req, out) -> { })) {
            io.github.resilience4j.circuitbreaker.CircuitBreaker breaker =
                    RegistryCircuitBreaker.create("registry", 1, Duration.ofMillis(10));
            breaker.transitionToOpenState();
            breaker.transitionToHalfOpenState();
            assertThat(breaker.tryAcquirePermission()).isTrue(); // the probe: another file's stream
            ShardDownloader downloader = new ShardDownloader(registry.stub(), Duration.ofSeconds(5), 1000, TWO_RETRIES, 1)
                    .withCircuitBreaker(breaker);
            Thread probeEnds = new Thread(() -> {
                try {
                    Thread.sleep(300); // far longer than two retries' backoff of 1-2 ms
                } catch (InterruptedException e) {
                    return;
                }
                breaker.onSuccess(300, java.util.concurrent.TimeUnit.MILLISECONDS);
            });
            probeEnds.start();

            assertThat(downloader.manifest("tiny").modelId()).isEqualTo("tiny");
            probeEnds.join();
        }
    }
}
