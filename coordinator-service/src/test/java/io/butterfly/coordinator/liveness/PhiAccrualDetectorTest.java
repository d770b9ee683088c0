package io.butterfly.coordinator.liveness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** The detector against a fake clock: times are plain milliseconds passed in. */
class PhiAccrualDetectorTest {

    /** The production defaults (LivenessProperties). */
    static final DetectorSettings DEFAULTS = new DetectorSettings(8.0, 4.0, 200, 100, 800, 100, 250);

    /** Beats every {@code periodMs} with seeded jitter of up to ±jitterMs, starting at {@code t}; returns the last time. */
    private static long beat(PhiAccrualDetector d, long t, int count, long periodMs, long jitterMs, Random random) {
        for (int i = 0; i < count; i++) {
            t += periodMs + (jitterMs == 0 ? 0 : random.nextLong(-jitterMs, jitterMs + 1));
            d.heartbeat(t);
        }
        return t;
    }

    @Test
    void phiIsZeroBeforeTheFirstHeartbeat() {
        PhiAccrualDetector d = new PhiAccrualDetector(DEFAULTS);
        assertEquals(0.0, d.phi(123_456));
        assertEquals(-1, d.lastHeartbeatMs());
        assertTrue(d.isAvailable(999_999));
    }

    @Test
    void phiGrowsMonotonicallyWithSilence() {
        PhiAccrualDetector d = new PhiAccrualDetector(DEFAULTS);
        long t = beat(d, 1_000, 50, 100, 10, new Random(1));
        double previous = -1;
        for (long silence = 0; silence <= 5_000; silence += 50) {
            double phi = d.phi(t + silence);
            assertTrue(phi >= previous, "phi must not decrease: " + previous + " then " + phi + " at " + silence);
            assertTrue(Double.isFinite(phi), "phi stays finite, at " + silence + " ms");
            previous = phi;
        }
        assertTrue(d.phi(t + 5_000) > 100, "five seconds of silence is far past any threshold");
    }

    @Test
    void regularHeartbeatsKeepPhiLow() {
        Random random = new Random(42);
        PhiAccrualDetector d = new PhiAccrualDetector(DEFAULTS);
        long t = 0;
        double worst = 0;
        for (int i = 0; i < 2_000; i++) {
            long next = t + 100 + random.nextLong(-30, 31);
            // Just before each beat arrives is when phi is highest.
            worst = Math.max(worst, d.phi(next - 1));
            d.heartbeat(next);
            t = next;
        }
        assertTrue(worst < 0.5, "regular beats with 30 ms jitter keep phi low, worst " + worst);
        assertEquals(100, d.meanIntervalMs(), 3);
    }

    @Test
    void oneSecondPauseStaysBelowTheFailureThreshold() {
        PhiAccrualDetector d = new PhiAccrualDetector(DEFAULTS);
        long t = beat(d, 0, 100, 100, 5, new Random(7));
        // A 1 s pause right after a beat, plus the beat that was due (so 1.1 s of silence), plus 50 ms of
        // scheduling slack after the process resumes.
        assertTrue(d.phi(t + 1_150) < DEFAULTS.failureThreshold(), "phi after 1.15 s: " + d.phi(t + 1_150));
        assertTrue(d.isAvailable(t + 1_150));
        // ... but a real silence crosses it within ~1.5 s.
        assertFalse(d.isAvailable(t + 1_500), "phi after 1.5 s: " + d.phi(t + 1_500));
    }

    @Test
    void suspicionComesBeforeFailure() {
        PhiAccrualDetector d = new PhiAccrualDetector(DEFAULTS);
        long t = beat(d, 0, 100, 100, 5, new Random(3));
        long suspectAt = firstCrossing(d, t, DEFAULTS.suspicionThreshold());
        long failAt = firstCrossing(d, t, DEFAULTS.failureThreshold());
        assertTrue(suspectAt < failAt, suspectAt + " < " + failAt);
        assertTrue(failAt - t > 1_150 && failAt - t < 1_600, "failure after " + (failAt - t) + " ms of silence");
    }

    @Test
    void acceptablePauseShiftsDetection() {
        DetectorSettings strict = new DetectorSettings(8.0, 4.0, 200, 100, 0, 100, 250);
        PhiAccrualDetector tolerant = new PhiAccrualDetector(DEFAULTS);
        PhiAccrualDetector eager = new PhiAccrualDetector(strict);
        long t1 = beat(tolerant, 0, 100, 100, 0, null);
        long t2 = beat(eager, 0, 100, 100, 0, null);
        long tolerantAt = firstCrossing(tolerant, t1, 8.0) - t1;
        long eagerAt = firstCrossing(eager, t2, 8.0) - t2;
        assertEquals(800, tolerantAt - eagerAt, 20, "the pause adds itself to the detection time");
    }

    @Test
    void minStdDeviationPreventsHairTrigger() {
        // Perfectly regular beats have zero variance; without the floor 101 ms would look fatal.
        DetectorSettings noPause = new DetectorSettings(8.0, 4.0, 200, 100, 0, 100, 250);
        PhiAccrualDetector d = new PhiAccrualDetector(noPause);
        long t = beat(d, 0, 300, 100, 0, null); // the seed intervals have left the window
        assertEquals(0.0, d.stdDeviationMs(), 1e-6);
        assertTrue(d.phi(t + 150) < 1.0, "50 ms late is not suspicious: " + d.phi(t + 150));
    }

    @Test
    void slowerRhythmIsLearned() {
        PhiAccrualDetector d = new PhiAccrualDetector(DEFAULTS);
        long t = beat(d, 0, 400, 500, 20, new Random(11)); // window of 200 now holds only 500 ms intervals
        assertEquals(500, d.meanIntervalMs(), 10);
        // 1.3 s of silence would be a failure at a 100 ms rhythm, not at a 500 ms one.
        assertTrue(d.isAvailable(t + 1_300), "phi " + d.phi(t + 1_300));
    }

    @Test
    void theBeatEndingALongSilenceDoesNotSkewTheWindow() {
        PhiAccrualDetector d = new PhiAccrualDetector(DEFAULTS);
        long t = beat(d, 0, 100, 100, 0, null);
        double mean = d.meanIntervalMs();
        d.heartbeat(t + 10_000); // back after a 10 s outage
        assertEquals(mean, d.meanIntervalMs(), 1e-9);
        assertEquals(0.0, d.phi(t + 10_000), 0.01);
    }

    @Test
    void firstHeartbeatEstimateSeedsTheWindow() {
        PhiAccrualDetector d = new PhiAccrualDetector(DEFAULTS);
        d.heartbeat(1_000);
        assertEquals(100, d.meanIntervalMs(), 1e-9);
        assertTrue(d.isAvailable(1_000 + 1_000));
        assertFalse(d.isAvailable(1_000 + 2_000));
    }

    @Test
    void outOfOrderTimesAreIgnored() {
        PhiAccrualDetector d = new PhiAccrualDetector(DEFAULTS);
        long t = beat(d, 0, 20, 100, 0, null);
        d.heartbeat(t - 500);
        assertEquals(t, d.lastHeartbeatMs());
    }

    @Test
    void invalidSettingsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new DetectorSettings(8, 9, 200, 100, 0, 100, 0));
        assertThrows(IllegalArgumentException.class, () -> new DetectorSettings(8, 4, 1, 100, 0, 100, 0));
        assertThrows(IllegalArgumentException.class, () -> new DetectorSettings(8, 4, 200, 0, 0, 100, 0));
        assertThrows(IllegalArgumentException.class, () -> new DetectorSettings(0, 0, 200, 100, 0, 100, 0));
    }

    @Test
    void phiMatchesTheNormalTailAtKnownPoints() {
        // At the mean the tail is one half: phi = log10(2).
        assertEquals(Math.log10(2), PhiAccrualDetector.phi(1_000, 1_000, 100), 1e-3);
        // Two standard deviations beyond: P(X > mean + 2 sd) = 0.02275, phi = 1.643 (approximation within 2%).
        assertEquals(1.643, PhiAccrualDetector.phi(1_200, 1_000, 100), 0.03);
    }

    private static long firstCrossing(PhiAccrualDetector d, long from, double threshold) {
        for (long t = from; t < from + 60_000; t++) {
            if (d.phi(t) >= threshold) {
                return t;
            }
        }
        throw new AssertionError("phi never reached " + threshold);
    }
}
