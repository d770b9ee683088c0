package io.butterfly.discovery.admission;

import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;
import java.util.HashMap;
import java.util.Map;

/**
 * Join attempts per source address (docs/initialization-and-bootstrap.md §9.3 step 4): a token bucket per
 * host, {@code burst} deep, refilled at {@code perSecond}. A refusal says when the next token is due
 * ({@code retry_after_ms}), and clients treat JOIN_RATE_LIMITED as retryable (docs/bootstrap-protocol.md §8.2).
 */
public final class JoinRateLimit implements AdmissionCheck {

    private static final int MAX_TRACKED = 10_000;

    private final int burst;
    private final double perSecond;
    private final Map<String, double[]> buckets = new HashMap<>(); // address -> {tokens, lastRefillMs}

    public JoinRateLimit(int burst, double perSecond) {
        if (burst < 1 || perSecond <= 0) {
            throw new IllegalArgumentException("join rate limit needs burst >= 1 and a positive rate");
        }
        this.burst = burst;
        this.perSecond = perSecond;
    }

    @Override
    public void check(JoinAttempt attempt) {
        check(attempt.sourceAddress(), attempt.nowMs());
    }

    public synchronized void check(String sourceAddress, long now) {
        if (buckets.size() > MAX_TRACKED) {
            buckets.values().removeIf(b -> refill(b, now) >= burst); // full buckets carry no information
        }
        double[] bucket = buckets.computeIfAbsent(sourceAddress, a -> new double[] {burst, now});
        double tokens = refill(bucket, now);
        if (tokens < 1) {
            long retryAfter = (long) Math.ceil((1 - tokens) / perSecond * 1000);
            throw new AdmissionException(ErrorCode.JOIN_RATE_LIMITED, ErrorKind.RESOURCE_EXHAUSTED,
                    "too many join attempts from " + sourceAddress + "; retry in " + retryAfter + " ms",
                    Map.of("retry_after_ms", Long.toString(retryAfter)));
        }
        bucket[0] = tokens - 1;
    }

    private double refill(double[] bucket, long now) {
        double tokens = Math.min(burst, bucket[0] + Math.max(0, now - (long) bucket[1]) / 1000.0 * perSecond);
        bucket[0] = tokens;
        bucket[1] = now;
        return tokens;
    }
}
