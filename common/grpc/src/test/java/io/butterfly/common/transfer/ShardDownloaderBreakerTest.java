package io.butterfly.common.transfer;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The downloader behind a registry breaker, against an in-process registry. */
class ShardDownloaderBreakerTest {

    @TempDir
    Path tmp;

    @Test
    void aFileWaitsForAnotherFilesHalfOpenProbeInsteadOfGivingUp() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        FakeRegistry[] self = new FakeRegistry[1];
        try (FakeRegistry registry = new FakeRegistry((req, out) -> {
            if (calls.getAndIncrement() == 0) {
                // The probe: a large file's stream, much longer than the other file's whole retry budget.
                self[0].send(req, out, 1000, 0);
                Thread.sleep(1500);
                self[0].sendFrom(req, out, 1000, 1);
            } else {
                self[0].sendFrom(req, out, 1000, 0);
            }
        }).file("a.safetensors", 5000).file("b.safetensors", 5000)) {
            self[0] = registry;
            // The registry was down and is back: the breaker lets one probe through.
            CircuitBreaker breaker = RegistryCircuitBreaker.create("registry", 1, Duration.ofMillis(10));
            breaker.transitionToOpenState();
            breaker.transitionToHalfOpenState();
            ShardDownloader downloader = new ShardDownloader(registry.stub(), Duration.ofSeconds(30), 1000,
                    new ShardDownloader.RetryPolicy(0, 3, Duration.ofMillis(10), Duration.ofMillis(20)), 2)
                    .withCircuitBreaker(breaker);

            List<Path> paths = downloader.download(registry.manifest(), List.of("a.safetensors", "b.safetensors"),
                    tmp, null);

            assertThat(paths).allSatisfy(p -> assertThat(p).exists());
            assertThat(breaker.getState()).isEqualTo(CircuitBreaker.State.CLOSED);
            assertThat(registry.fetches).hasSize(2);
        }
    }
}
