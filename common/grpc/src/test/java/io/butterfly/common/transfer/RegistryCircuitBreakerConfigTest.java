package io.butterfly.common.transfer;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RegistryCircuitBreakerConfigTest {

    @Test
    void longSuccessfulFileStreamsDoNotOpenTheBreaker() {
        CircuitBreaker breaker = RegistryCircuitBreaker.create("registry", 3, Duration.ofSeconds(5));
        // A multi-GB shard takes minutes to stream; each such download succeeded.
        for (int i = 0; i < 3; i++) {
            assertThat(breaker.tryAcquirePermission()).isTrue();
            breaker.onSuccess(5, TimeUnit.MINUTES);
        }
        assertThat(breaker.getState()).isEqualTo(CircuitBreaker.State.CLOSED);
        assertThat(breaker.tryAcquirePermission()).isTrue();
    }

    @Test
    void consecutiveFailuresStillOpenIt() {
        CircuitBreaker breaker = RegistryCircuitBreaker.create("registry", 3, Duration.ofSeconds(5));
        for (int i = 0; i < 3; i++) {
            assertThat(breaker.tryAcquirePermission()).isTrue();
            breaker.onError(10, TimeUnit.MILLISECONDS, new IOException("unreachable"));
        }
        assertThat(breaker.getState()).isEqualTo(CircuitBreaker.State.OPEN);
    }
}
