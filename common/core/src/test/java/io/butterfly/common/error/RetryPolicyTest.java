package io.butterfly.common.error;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

    @Test
    void onlyTransientAndResourceErrorsAreRetried() {
        assertTrue(RetryPolicy.retryable(ErrorCode.JOIN_RATE_LIMITED));
        assertTrue(RetryPolicy.retryable(ErrorCode.CLUSTER_FULL));
        assertTrue(RetryPolicy.retryable(ErrorCode.TIMEOUT));
        assertFalse(RetryPolicy.retryable(ErrorCode.CLUSTER_NAME_MISMATCH));
        assertFalse(RetryPolicy.retryable(ErrorCode.UNSUPPORTED_VERSION));
        assertFalse(RetryPolicy.retryable(ErrorCode.INVALID_SIGNATURE));
        assertFalse(RetryPolicy.retryable(ErrorCode.DUPLICATE_NODE_ID));
    }

    @Test
    void backoffDoublesUpToTheCapWithAtMostHalfAgainOfJitter() {
        RetryPolicy policy = new RetryPolicy(100, 1600);
        Random random = new Random(7);
        for (int attempt = 0; attempt < 10; attempt++) {
            long backoff = Math.min(100L << Math.min(attempt, 5), 1600);
            for (int i = 0; i < 100; i++) {
                long d = policy.delayMillis(attempt, 0, random);
                assertTrue(d >= backoff && d <= backoff + backoff / 2, "attempt " + attempt + ": " + d);
            }
        }
        long suggested = policy.delayMillis(0, 700, random);
        assertTrue(suggested >= 700 && suggested <= 1050, "the server's retry_after is the base: " + suggested);
    }
}
