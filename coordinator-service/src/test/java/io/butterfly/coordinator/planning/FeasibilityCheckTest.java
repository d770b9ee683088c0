package io.butterfly.coordinator.planning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class FeasibilityCheckTest {

    private static final long MIB = 1L << 20;

    @Test
    void namesNeedAndCapacityWhenTheClusterIsTooSmall() {
        ModelFootprint model = new ModelFootprint(new long[] {400 * MIB, 400 * MIB}, 100 * MIB, 100 * MIB, 24 * MIB);
        FeasibilityReport r = FeasibilityCheck.check(model, List.of(new WorkerCapacity("a", 1, 256 * MIB),
                new WorkerCapacity("b", 1, 256 * MIB)));
        assertFalse(r.feasible());
        assertEquals(1024 * MIB, r.requiredBytes());
        assertEquals(512 * MIB, r.availableBytes());
        assertTrue(r.reason().contains("InsufficientResources") && r.reason().contains("1.0 GiB")
                && r.reason().contains("512.0 MiB"), r.reason());
    }

    @Test
    void endStagesMustFitSomeWorker() {
        // 4 KiB in total is enough, but layer 0 with the embedding is 3 KiB and no worker has more than 2.
        ModelFootprint model = new ModelFootprint(new long[] {1024, 1024}, 2048, 0, 0);
        FeasibilityReport r = FeasibilityCheck.check(model, List.of(new WorkerCapacity("a", 1, 2048),
                new WorkerCapacity("b", 1, 2048)));
        assertFalse(r.feasible(), r.reason());
        assertEquals(3072, r.requiredBytes());
    }

    @Test
    void feasibleAndUnknownMemory() {
        ModelFootprint model = ModelFootprint.uniform(4, 100);
        assertTrue(FeasibilityCheck.check(model, List.of(new WorkerCapacity("a", 1, 400))).feasible());
        FeasibilityReport unknown = FeasibilityCheck.check(model, List.of(new WorkerCapacity("a", 1, 0)));
        assertTrue(unknown.feasible());
        assertEquals(0, unknown.availableBytes());
    }
}
