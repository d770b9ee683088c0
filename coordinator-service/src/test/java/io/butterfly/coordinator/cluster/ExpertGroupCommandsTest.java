package io.butterfly.coordinator.cluster;

import static io.butterfly.coordinator.cluster.Fixtures.info;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.planning.ExpertGroup;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.raft.ClusterStateCodec;
import io.butterfly.coordinator.statemachine.SystemState;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A plan whose stage spreads its experts over workers, through the reducer: the pipeline is the stage's worker alone,
 * the group holders are planned (assigned the stage's layers without embedding or head, waited for, watched, never
 * spares); a lost holder is a lost part of the plan; a spare taking its group is a new part for the holders of that
 * stage.
 */
class ExpertGroupCommandsTest {

    private static final StageAssignment SPREAD = new StageAssignment("w1", 0, 4, true, true, List.of(
            new ExpertGroup("w1", 0, 3), new ExpertGroup("w2", 3, 6), new ExpertGroup("w3", 6, 8)));

    private static Fixtures ready() {
        Fixtures f = Fixtures.joined().apply(new ClusterCommand.NodeJoined(info("w3"), 5))
                .apply(new ClusterCommand.NodeJoined(info("w4"), 6))
                .apply(new ClusterCommand.PartitionsAssigned(1, List.of(SPREAD), "bootstrap", 7));
        for (String id : List.of("w1", "w2", "w3")) {
            assertThat(f.state().system()).isEqualTo(SystemState.BOOTSTRAPPING);
            f.apply(new ClusterCommand.LoadCompleted(id, 1, "c-" + id, 8));
        }
        return f.apply(Fixtures.validated(1, 9));
    }

    @Test
    void holdersArePlannedButOnlyTheStagesWorkerIsInThePipeline() throws Exception {
        ClusterState s = ready().state();
        assertThat(s.system()).isEqualTo(SystemState.READY);
        assertThat(s.pipeline()).containsExactly("w1");
        assertThat(s.planned()).containsExactly("w1", "w2", "w3");
        assertThat(s.spares()).containsExactly("w4");
        NodeRecord w2 = s.nodes().get("w2");
        assertThat(List.of(w2.layerStart(), w2.layerEnd())).containsExactly(0, 4);
        assertThat(w2.hasEmbedding() || w2.hasHead()).isFalse();
        assertThat(s.nodes().get("w1").hasEmbedding() && s.nodes().get("w1").hasHead()).isTrue();
        assertThat(s.stageKeptSince("w3")).isEqualTo(1);
        assertThat(ClusterStateCodec.decode(ClusterStateCodec.encode(s))).isEqualTo(s);
    }

    @Test
    void aLostHolderIsReplannedAndItsSpareLoadsBeforeReady() {
        Fixtures f = ready().apply(new ClusterCommand.NodeSuspected("w2", 10, 5, "closed", 10))
                .apply(new ClusterCommand.NodeFailed("w2", 10, 9, "closed", 10));
        assertThat(f.state().system()).isEqualTo(SystemState.DEGRADED);
        assertThat(f.state().lostStages()).containsExactly("w2");
        StageAssignment regrouped = new StageAssignment("w1", 0, 4, true, true, List.of(
                new ExpertGroup("w1", 0, 3), new ExpertGroup("w4", 3, 6), new ExpertGroup("w3", 6, 8)));
        f.apply(new ClusterCommand.PartitionsAssigned(2, List.of(regrouped), "w2 FAILED: spare w4 takes experts", 11));
        ClusterState s = f.state();
        assertThat(s.lostStages()).isEmpty();
        assertThat(s.planned()).containsExactly("w1", "w4", "w3");
        assertThat(s.stageKeptSince("w4")).isEqualTo(2);
        assertThat(s.pipelineReady()).isFalse();
        for (String id : List.of("w1", "w3", "w4")) {
            f.apply(new ClusterCommand.LoadCompleted(id, 2, "c-" + id, 12));
        }
        assertThat(f.state().pipelineReady()).isTrue();
    }

    @Test
    void aWorkerMayHoldOnePartOfAPlan() {
        StageAssignment first = new StageAssignment("w1", 0, 2, true, false, List.of(
                new ExpertGroup("w1", 0, 4), new ExpertGroup("w2", 4, 8)));
        StageAssignment second = new StageAssignment("w2", 2, 4, false, true);
        assertThatThrownBy(() -> Fixtures.joined().apply(new ClusterCommand.PartitionsAssigned(1,
                List.of(first, second), "", 7))).hasMessageContaining("'w2' appears in two stages");
    }
}
