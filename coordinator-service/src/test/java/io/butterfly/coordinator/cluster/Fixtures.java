package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.planning.StageAssignment;
import java.util.List;

/** Builds states by applying real commands, so tests exercise the reducer rather than hand-made values. */
final class Fixtures {

    static final String ROOT = "merkle-root";

    private ClusterState state = ClusterState.initial();
    private long index;

    static NodeInfo info(String id) {
        return new NodeInfo(id, "worker", "host-" + id, 9000, 8000, 4, 8L << 30, 12.5, "cpu");
    }

    static List<StageAssignment> twoStages(String a, String b) {
        return List.of(new StageAssignment(a, 0, 2, true, false), new StageAssignment(b, 2, 4, false, true));
    }

    Fixtures apply(ClusterCommand c) {
        state = ClusterReducer.apply(state, c, ++index);
        return this;
    }

    /** An independent copy, to apply different commands to the same state. */
    Fixtures copy() {
        Fixtures c = new Fixtures();
        c.state = state;
        c.index = index;
        return c;
    }

    ClusterState state() {
        return state;
    }

    long nextIndex() {
        return index + 1;
    }

    /** Bootstrapping with the model pinned and workers w1, w2 joined. */
    static Fixtures joined() {
        return new Fixtures()
                .apply(new ClusterCommand.Bootstrap("tiny", 2, 1))
                .apply(new ClusterCommand.ModelResolved("tiny", ROOT, 2))
                .apply(new ClusterCommand.NodeJoined(info("w1"), 3))
                .apply(new ClusterCommand.NodeJoined(info("w2"), 4));
    }

    /** Joined plus the epoch-1 assignment. */
    static Fixtures assigned() {
        return joined().apply(new ClusterCommand.PartitionsAssigned(1, twoStages("w1", "w2"), 5));
    }

    /** READY: both stages loaded and their weights cross-validated. */
    static Fixtures ready() {
        return assigned()
                .apply(new ClusterCommand.LoadCompleted("w1", 1, "c1", 6))
                .apply(new ClusterCommand.LoadCompleted("w2", 1, "c2", 7))
                .apply(validated(1, 8));
    }

    /** A VALID cross-validation of {@code epoch} by w1 and w2. */
    static ClusterCommand.WeightsValidated validated(long epoch, long atMs) {
        return new ClusterCommand.WeightsValidated(new WeightValidation(epoch, WeightValidation.Status.VALID, ROOT,
                "partition-root", List.of("w1", "w2"), List.of(), List.of(), atMs), atMs);
    }
}
