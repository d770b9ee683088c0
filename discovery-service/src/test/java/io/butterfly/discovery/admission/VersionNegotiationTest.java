package io.butterfly.discovery.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.discovery.membership.ProtocolVersion;
import java.util.Random;
import org.junit.jupiter.api.Test;

class VersionNegotiationTest {

    private final VersionNegotiation ours = new VersionNegotiation(new ProtocolVersion(1, 3),
            new ProtocolFeatures(ProtocolFeatures.COMPRESSION | ProtocolFeatures.ENCRYPTION
                    | ProtocolFeatures.ADAPTIVE_TIMEOUTS));

    @Test
    void differentMajorIsIncompatible() {
        assertTrue(ours.negotiate(new ProtocolVersion(2, 0), new ProtocolFeatures(~0L)).isEmpty());
        assertTrue(ours.negotiate(new ProtocolVersion(0, 9), new ProtocolFeatures(~0L)).isEmpty());
    }

    @Test
    void lowerMinorIsChosenInBothDirections() {
        assertEquals(new ProtocolVersion(1, 1),
                ours.negotiate(new ProtocolVersion(1, 1), new ProtocolFeatures(0)).orElseThrow().version());
        assertEquals(new ProtocolVersion(1, 3),
                ours.negotiate(new ProtocolVersion(1, 7), new ProtocolFeatures(0)).orElseThrow().version());
    }

    @Test
    void featuresAreTheIntersection() {
        ProtocolFeatures common = ours.negotiate(new ProtocolVersion(1, 3),
                new ProtocolFeatures(ProtocolFeatures.COMPRESSION | ProtocolFeatures.P2P_DISTRIBUTION
                        | ProtocolFeatures.ADAPTIVE_TIMEOUTS)).orElseThrow().features();
        assertTrue(common.supports(ProtocolFeatures.COMPRESSION));
        assertTrue(common.supports(ProtocolFeatures.ADAPTIVE_TIMEOUTS));
        assertFalse(common.supports(ProtocolFeatures.P2P_DISTRIBUTION));
        assertFalse(common.supports(ProtocolFeatures.ENCRYPTION));
    }

    @Test
    void negotiationIsSymmetricForRandomPairs() {
        Random random = new Random(42);
        for (int i = 0; i < 500; i++) {
            ProtocolVersion a = new ProtocolVersion(random.nextInt(3), random.nextInt(5));
            ProtocolVersion b = new ProtocolVersion(random.nextInt(3), random.nextInt(5));
            ProtocolFeatures fa = new ProtocolFeatures(random.nextLong());
            ProtocolFeatures fb = new ProtocolFeatures(random.nextLong());
            var ab = new VersionNegotiation(a, fa).negotiate(b, fb);
            var ba = new VersionNegotiation(b, fb).negotiate(a, fa);
            assertEquals(ab, ba);
            assertEquals(a.major() == b.major(), ab.isPresent());
            ab.ifPresent(agreement -> {
                assertEquals(Math.min(a.minor(), b.minor()), agreement.version().minor());
                assertEquals(fa.bits() & fb.bits(), agreement.features().bits());
            });
        }
    }
}
