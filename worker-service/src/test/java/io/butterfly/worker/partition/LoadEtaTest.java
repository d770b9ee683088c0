package io.butterfly.worker.partition;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class LoadEtaTest {

    @Test
    void extrapolatesTheRateSoFar() {
        // A quarter in 2 s: three quarters left take 6 s.
        assertEquals(6.0, LoadEta.seconds(25, 100, 2_000_000_000L), 1e-9);
        assertEquals(0.0, LoadEta.seconds(100, 100, 5_000_000_000L));
        assertEquals(-1.0, LoadEta.seconds(0, 100, 1_000_000_000L));
    }

    @Test
    void estimatesNothingFromTheFirstFewBytes() {
        // config.json (457 bytes) fetched a second into a 10 MB load: no estimate of hours.
        assertEquals(-1.0, LoadEta.seconds(457, 10_000_000, 1_000_000_000L));
        assertEquals(9.0, LoadEta.seconds(1_000_000, 10_000_000, 1_000_000_000L), 1e-9);
    }
}
