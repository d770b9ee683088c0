package io.butterfly.coordinator.liveness;

/**
 * Phi-accrual failure detector for one node (Hayashi et al., 2004; the variant of Akka and
 * Cassandra). Instead of a yes/no timeout it answers "how unlikely is this silence", given the
 * inter-arrival times of the heartbeats seen so far, on a log scale: phi = -log10(P(a heartbeat
 * arrives later than now)). phi 1 means a 10% chance the node is fine, phi 8 one in 10^8.
 *
 * <p>Inter-arrival times are modelled as a normal distribution whose mean is the window mean plus
 * the acceptable pause (so a GC or a short stall does not look like death) and whose standard
 * deviation is at least the configured minimum (so perfectly regular beats do not make the
 * detector hair-triggered). Times are passed in by the caller: no clock is read here.
 *
 * <p>Not thread-safe on its own; callers serialise access per node.
 */
public final class PhiAccrualDetector {

    private static final double LN_10 = Math.log(10);

    private final DetectorSettings settings;
    private final IntervalWindow window;
    private long lastHeartbeatMs = -1;

    public PhiAccrualDetector(DetectorSettings settings) {
        this.settings = settings;
        this.window = new IntervalWindow(settings.windowSize());
    }

    /** Records a heartbeat that arrived at {@code nowMs}. */
    public void heartbeat(long nowMs) {
        if (lastHeartbeatMs < 0) {
            // Seed the window with the expected rhythm (mean ± estimate/4) so phi is meaningful from
            // the second beat on, as Akka does.
            long estimate = settings.firstHeartbeatEstimateMs();
            window.add(estimate - estimate / 4);
            window.add(estimate + estimate / 4);
        } else if (nowMs >= lastHeartbeatMs) {
            long interval = nowMs - lastHeartbeatMs;
            // The beat that ends a long silence says nothing about the normal rhythm: keeping it would
            // inflate the mean and slow detection of the next real failure.
            if (phi(nowMs) < settings.failureThreshold()) {
                window.add(interval);
            }
        }
        lastHeartbeatMs = Math.max(lastHeartbeatMs, nowMs);
    }

    /** Suspicion level at {@code nowMs}; 0 before the first heartbeat (nothing is known yet). */
    public double phi(long nowMs) {
        if (lastHeartbeatMs < 0) {
            return 0.0;
        }
        double sinceLast = Math.max(0, nowMs - lastHeartbeatMs);
        double mean = window.mean() + settings.acceptableHeartbeatPauseMs();
        double stdDev = Math.max(window.stdDeviation(), settings.minStdDeviationMs());
        return phi(sinceLast, mean, stdDev);
    }

    /**
     * -log10 of the normal tail beyond {@code sinceLast}, with the logistic approximation of the
     * normal CDF used by Akka and Cassandra. Above the mean it is computed in log space so it stays
     * finite (and comparable) for arbitrarily long silences instead of overflowing to infinity.
     */
    static double phi(double sinceLast, double mean, double stdDev) {
        double y = (sinceLast - mean) / stdDev;
        double exponent = -y * (1.5976 + 0.070566 * y * y);
        if (sinceLast > mean) {
            // -log10(e / (1 + e)) = -log10(e) + log10(1 + e), e = exp(exponent)
            return -exponent / LN_10 + Math.log1p(Math.exp(exponent)) / LN_10;
        }
        double e = Math.exp(exponent);
        return -Math.log10(1.0 - 1.0 / (1.0 + e));
    }

    public boolean isAvailable(long nowMs) {
        return phi(nowMs) < settings.failureThreshold();
    }

    /** Arrival time of the last heartbeat, or -1 if none arrived yet. */
    public long lastHeartbeatMs() {
        return lastHeartbeatMs;
    }

    public double meanIntervalMs() {
        return window.mean();
    }

    public double stdDeviationMs() {
        return window.stdDeviation();
    }

    /** Sliding window of the last N inter-arrival times with running sums. */
    static final class IntervalWindow {
        private final long[] samples;
        private int next;
        private int size;
        private double sum;
        private double sumOfSquares;

        IntervalWindow(int capacity) {
            samples = new long[capacity];
        }

        void add(long interval) {
            if (size == samples.length) {
                long evicted = samples[next];
                sum -= evicted;
                sumOfSquares -= (double) evicted * evicted;
            } else {
                size++;
            }
            samples[next] = interval;
            next = (next + 1) % samples.length;
            sum += interval;
            sumOfSquares += (double) interval * interval;
        }

        double mean() {
            return size == 0 ? 0.0 : sum / size;
        }

        double stdDeviation() {
            if (size == 0) {
                return 0.0;
            }
            double mean = mean();
            return Math.sqrt(Math.max(0.0, sumOfSquares / size - mean * mean));
        }

        int size() {
            return size;
        }
    }
}
