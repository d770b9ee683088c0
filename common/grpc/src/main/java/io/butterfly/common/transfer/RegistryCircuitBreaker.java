package io.butterfly.common.transfer;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import java.time.Duration;

/**
 * The circuit breaker a node keeps per registry: it opens after {@code failuresToOpen} consecutive calls
 * failed because the registry was unreachable, stays open for {@code openFor}, then lets one probe call
 * through (half-open) and closes again when it succeeds.
 */
public final class RegistryCircuitBreaker {

    private RegistryCircuitBreaker() {
    }

    public static CircuitBreaker create(String name, int failuresToOpen, Duration openFor) {
        if (failuresToOpen <= 0) {
            throw new IllegalArgumentException("failuresToOpen must be positive: " + failuresToOpen);
        }
        CircuitBreakerConfig config = CircuitBreakerConfig.custom()
                .slidingWindowType(CircuitBreakerConfig.SlidingWindowType.COUNT_BASED)
                .slidingWindowSize(failuresToOpen)
                .minimumNumberOfCalls(failuresToOpen)
                // Every call in the window failed: N consecutive failures.
                .failureRateThreshold(100)
                // A call is one whole file's stream, minutes for a large shard: never counted as slow (the
                // default counts calls over 60 s, and a window of them all slow opened the breaker).
                .slowCallDurationThreshold(Duration.ofDays(365))
                .waitDurationInOpenState(openFor)
                .permittedNumberOfCallsInHalfOpenState(1)
                .build();
        return CircuitBreaker.of(name, config);
    }
}
