package io.butterfly.discovery.admission;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.discovery.api.grpc.ControlMessages;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.GpuInfo;
import io.butterfly.proto.common.v1.NodeCapabilities;
import java.util.List;
import java.util.Random;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** Seeded checks of the two admission rules with arithmetic: the token bucket and the plausibility bounds. */
class JoinRateLimitAndPlausibilityTest {

    @Test
    void bucketAllowsItsBurstThenNamesTheWaitAndRefillsAtTheRate() {
        Random random = new Random(7);
        for (int round = 0; round < 50; round++) {
            int burst = 1 + random.nextInt(20);
            double perSecond = 0.5 + random.nextDouble() * 10;
            long now = random.nextLong(1_000_000_000L);
            JoinRateLimit limit = new JoinRateLimit(burst, perSecond);
            for (int i = 0; i < burst; i++) {
                limit.check("10.0.0.1", now);
            }
            long t = now;
            AdmissionException refused = assertThrows(AdmissionException.class, () -> limit.check("10.0.0.1", t));
            assertEquals(ErrorCode.JOIN_RATE_LIMITED, refused.code());
            long retryAfter = Long.parseLong(refused.context().get("retry_after_ms"));
            assertTrue(Math.abs(retryAfter - 1000 / perSecond) <= 1, () -> retryAfter + " ms at " + perSecond + "/s");
            // Another address has its own bucket; the refused one gets a token exactly when told.
            assertDoesNotThrow(() -> limit.check("10.0.0.2", t));
            assertDoesNotThrow(() -> limit.check("10.0.0.1", t + retryAfter));
        }
    }

    private static NodeCapabilities plausible(Random random) {
        long memory = (1L + random.nextInt(1024)) << 30;
        return NodeCapabilities.newBuilder()
                .setCpuCores(1 + random.nextInt(1024))
                .setMemoryBytes(memory)
                .setMaxModelBytes(random.nextLong(memory))
                .setMeasuredGflops(0.1 + random.nextDouble() * 1e5)
                .setMemoryBandwidthGbps(random.nextDouble() * 3000)
                .addGpus(GpuInfo.newBuilder().setIndex(0).setMemoryBytes(random.nextLong(80L << 30)))
                .setWeightBytes(new int[]{0, 2, 4}[random.nextInt(3)])
                .build();
    }

    @Test
    void plausibleCapabilitiesPassAndAnyOneAbsurdFieldIsNamed() {
        Random random = new Random(11);
        List<UnaryOperator<NodeCapabilities.Builder>> absurd = List.of(
                b -> b.setCpuCores(0),
                b -> b.setCpuCores(4096),
                b -> b.setMemoryBytes(1 << 20),
                b -> b.setMemoryBytes(Long.MAX_VALUE),
                b -> b.setMeasuredGflops(Double.NaN),
                b -> b.setMeasuredGflops(1e9),
                b -> b.setMeasuredGflops(0),
                b -> b.setMemoryBandwidthGbps(1e6),
                b -> b.setMaxModelBytes(Long.MAX_VALUE / 2),
                b -> b.setGpus(0, GpuInfo.newBuilder().setIndex(0).setMemoryBytes(1L << 50)),
                b -> b.setWeightBytes(8));
        for (int round = 0; round < 200; round++) {
            NodeCapabilities ok = plausible(random);
            assertNull(CapabilityPlausibility.problem(ControlMessages.capabilities(ok), true), ok::toString);
            UnaryOperator<NodeCapabilities.Builder> breakIt = absurd.get(random.nextInt(absurd.size()));
            NodeCapabilities bad = breakIt.apply(ok.toBuilder()).build();
            assertNotNull(CapabilityPlausibility.problem(ControlMessages.capabilities(bad), true), bad::toString);
        }
        // Only workers must bring a measured throughput (the coordinator does not run layers).
        NodeCapabilities coordinator = plausible(random).toBuilder().setMeasuredGflops(0).build();
        assertNull(CapabilityPlausibility.problem(ControlMessages.capabilities(coordinator), false));
    }
}
