package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.statemachine.SystemState;
import java.util.List;
import org.junit.jupiter.api.Test;

/** FeasibilityAssessed and WeightsValidated: the model-integrity commands. */
class IntegrityCommandsTest {

    @Test
    void anInfeasibleVerdictIsRecordedAndShownWithoutAnAssignment() {
        Fixtures f = Fixtures.joined();
        String reason = "InsufficientResources: the model needs 3.0 GiB, the 2 workers have 1.0 GiB";
        f.apply(new ClusterCommand.FeasibilityAssessed(new Feasibility("optimal", false, 3L << 30, 1L << 30, reason,
                5), 5));
        ClusterState s = f.state();
        assertEquals(SystemState.BOOTSTRAPPING, s.system());
        assertEquals(reason, s.statusMessage());
        assertFalse(s.checks().feasibility().feasible());
        assertEquals(3L << 30, s.checks().feasibility().requiredBytes());
        assertTrue(s.pipeline().isEmpty());
        assertEquals(0, s.epoch());
    }

    @Test
    void aFeasibleVerdictAfterARefusalReplacesTheError() {
        Fixtures f = Fixtures.joined();
        f.apply(new ClusterCommand.FeasibilityAssessed(new Feasibility("optimal", false, 3, 2, "InsufficientResources: x",
                5), 5));
        f.apply(new ClusterCommand.FeasibilityAssessed(new Feasibility("optimal", true, 3, 4, "ok", 6), 6));
        assertEquals("planning (optimal planner): ok", f.state().statusMessage());
        assertTrue(f.state().checks().feasibility().feasible());
    }

    @Test
    void feasibilityIsRefusedBeforeBootstrap() {
        assertThrows(IllegalTransitionException.class, () -> ClusterReducer.apply(ClusterState.initial(),
                new ClusterCommand.FeasibilityAssessed(new Feasibility("optimal", true, 1, 2, "ok", 1), 1), 1));
    }

    @Test
    void readyOnlyAfterAValidCrossValidationOfTheCurrentEpoch() {
        Fixtures f = Fixtures.assigned()
                .apply(new ClusterCommand.LoadCompleted("w1", 1, "c1", 6))
                .apply(new ClusterCommand.LoadCompleted("w2", 1, "c2", 7));
        assertEquals(SystemState.BOOTSTRAPPING, f.state().system());
        assertNull(f.state().checks().validation());

        WeightValidation invalid = new WeightValidation(1, WeightValidation.Status.INVALID, "other-root", "p",
                List.of("w1"), List.of("w2"), List.of("w2: layer_002.safetensors sha256 abc, manifest def"), 8);
        f.apply(new ClusterCommand.WeightsValidated(invalid, 8));
        assertEquals(SystemState.BOOTSTRAPPING, f.state().system());
        assertTrue(f.state().statusMessage().contains("w2: layer_002.safetensors"), f.state().statusMessage());
        assertSame(invalid, f.state().checks().validation());

        f.apply(Fixtures.validated(1, 9));
        assertEquals(SystemState.READY, f.state().system());
        assertTrue(f.state().checks().weightsValidFor(1));
    }

    @Test
    void aValidationOfAnotherEpochIsRefused() {
        Fixtures f = Fixtures.assigned();
        ClusterState before = f.state();
        assertThrows(IllegalTransitionException.class, () -> f.apply(Fixtures.validated(2, 9)));
        assertSame(before, f.state());
    }

    @Test
    void aNewEpochNeedsANewValidation() {
        Fixtures f = Fixtures.ready();
        assertTrue(f.state().checks().weightsValidFor(1));
        f.apply(new ClusterCommand.PartitionsAssigned(2, Fixtures.twoStages("w2", "w1"), 20));
        assertFalse(f.state().checks().weightsValidFor(2));
    }

    @Test
    void aStageLoadedAgainAfterTheValidationIsValidatedAgainBeforeReady() {
        // A validation that read its reports before w1 failed and came back without its partition is recorded
        // after the recovery: it does not cover w1's reload.
        Fixtures f = Fixtures.ready()
                .apply(new ClusterCommand.NodeSuspected("w1", 90, 4.5, "silence", 100))
                .apply(new ClusterCommand.NodeFailed("w1", 90, 8.5, "silence", 1_500))
                .apply(new ClusterCommand.NodeRecovered("w1", false, 2_000, 2_000))
                .apply(Fixtures.validated(1, 2_100));
        assertEquals(SystemState.DEGRADED, f.state().system());

        f.apply(new ClusterCommand.LoadCompleted("w1", 1, "c1", 3_000));

        assertEquals(SystemState.DEGRADED, f.state().system());
        assertFalse(f.state().checks().weightsValidFor(1));
        assertTrue(f.state().statusMessage().contains("cross-validating"), f.state().statusMessage());
        f.apply(Fixtures.validated(1, 3_100));
        assertEquals(SystemState.READY, f.state().system());
    }

    @Test
    void aRepeatedLoadReportOfTheSameLoadKeepsTheValidation() {
        Fixtures f = Fixtures.ready().apply(new ClusterCommand.LoadCompleted("w1", 1, "c1", 50));
        assertTrue(f.state().checks().weightsValidFor(1));
        assertEquals(SystemState.READY, f.state().system());
    }
}
