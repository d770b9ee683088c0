package io.butterfly.harness;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * A service's wall clock in the cluster in one JVM: the system's, moved by a skew a test sets and sets back while it
 * runs (a clock-skew fault; NTP stepping a host's clock looks the same). What the service times with
 * {@code System.nanoTime} (Ratis' timeouts, gRPC deadlines) does not move, as a monotonic clock would not.
 */
public final class SkewedClock extends Clock {

    private volatile long skewMillis;

    public void skew(Duration skew) {
        skewMillis = skew.toMillis();
    }

    public Duration skew() {
        return Duration.ofMillis(skewMillis);
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return Clock.offset(Clock.system(zone), skew()); // a copy at this moment's skew
    }

    @Override
    public long millis() {
        return System.currentTimeMillis() + skewMillis;
    }

    @Override
    public Instant instant() {
        return Instant.now().plusMillis(skewMillis);
    }
}
