package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Long seeded random command sequences: whatever is accepted or refused, the epoch never decreases,
 * the log index advances only on accepted commands, a refused command leaves the state unchanged and
 * only table transitions happen.
 */
public class EpochMonotonicTest {

    private static final List<String> NODES = List.of("w1", "w2", "w3", "w4");

    @Test
    void epochNeverDecreasesOverRandomCommands() {
        for (long seed = 1; seed <= 20; seed++) {
            run(new Random(seed), 2_000);
        }
    }

    private static void run(Random rnd, int steps) {
        ClusterState state = ClusterState.initial();
        long index = 0;
        int accepted = 0;
        long maxEpoch = 0;
        for (int i = 0; i < steps; i++) {
            ClusterCommand c = randomCommand(rnd, state, i);
            ClusterState before = state;
            try {
                state = ClusterReducer.apply(state, c, index + 1);
                index++;
                accepted++;
                assertTrue(before.system().canTransitionTo(state.system())
                                || (before.system() == SystemState.COMPUTING && state.system() == SystemState.READY),
                        before.system() + " -> " + state.system() + " on " + c);
            } catch (IllegalTransitionException e) {
                assertEquals(before, state);
            }
            assertTrue(state.epoch() >= before.epoch(), "epoch decreased on " + c);
            maxEpoch = Math.max(maxEpoch, state.epoch());
            assertEquals(index, state.lastAppliedIndex());
        }
        // Guard against a generator that only produces refusals: the sequence must really move.
        assertTrue(accepted > steps / 20, "too few commands accepted: " + accepted);
        assertTrue(maxEpoch > 1, "no reassignment happened");
        long epoch = state.epoch();
        if (state.system() != SystemState.UNINITIALIZED) {
            state = ClusterReducer.apply(state, new ClusterCommand.Shutdown("end", steps), ++index);
            state = ClusterReducer.apply(state, new ClusterCommand.CleanupCompleted(steps), ++index);
            assertEquals(SystemState.TERMINATED, state.system());
        }
        assertEquals(epoch, state.epoch());
    }

    public static ClusterCommand randomCommand(Random rnd, ClusterState s, long at) {
        String node = NODES.get(rnd.nextInt(NODES.size()));
        // Mostly the current epoch, sometimes stale or future, to exercise fencing.
        long epoch = Math.max(0, s.epoch() + rnd.nextInt(3) - 1);
        String task = "t" + rnd.nextInt(8);
        return switch (rnd.nextInt(18)) {
            case 0 -> new ClusterCommand.Bootstrap("m", 1 + rnd.nextInt(4), at);
            case 1 -> new ClusterCommand.ModelResolved("m", rnd.nextBoolean() ? "root" : "root2", at);
            case 2, 3 -> new ClusterCommand.NodeJoined(Fixtures.info(node), at);
            case 4 -> new ClusterCommand.PartitionsAssigned(epoch, stages(rnd), at);
            case 5 -> new ClusterCommand.LoadProgressed(node, epoch,
                    PartitionState.values()[rnd.nextInt(PartitionState.values().length)], rnd.nextDouble(), "f", at);
            case 6 -> new ClusterCommand.LoadCompleted(node, epoch, "sum", rnd.nextBoolean() ? 0 : rnd.nextLong(1L << 34), at);
            case 7 -> switch (rnd.nextInt(6)) {
                case 0, 1, 2 -> new ClusterCommand.LoadCompleted(node, epoch, "sum", at);
                case 3, 4 -> new ClusterCommand.WeightsValidated(new WeightValidation(epoch,
                        rnd.nextInt(4) == 0 ? WeightValidation.Status.INVALID : WeightValidation.Status.VALID, "root",
                        "p", List.of(node), List.of(), List.of(), at), at);
                default -> new ClusterCommand.FeasibilityAssessed(new Feasibility("optimal", rnd.nextBoolean(), 2, 1,
                        "InsufficientResources: need 2 B, have 1 B", at), at);
            };
            case 8 -> new ClusterCommand.LoadFailed(node, epoch, "E", "msg", at);
            case 9 -> new ClusterCommand.TaskSubmitted(task + "-" + at, 3, at);
            case 10 -> tasksRecorded(rnd, s, task + "-" + at, at);
            case 11 -> new ClusterCommand.TaskFinished(anyTask(rnd, s, task), java.util.List.of(5L, 2L), "stop", at);
            case 12 -> new ClusterCommand.TaskFailed(anyTask(rnd, s, task), "boom", at);
            case 13 -> new ClusterCommand.NodeSuspected(node, at - 1, 5 + rnd.nextDouble() * 5, "phi", at);
            case 14 -> new ClusterCommand.NodeSuspicionCleared(node, at, at);
            case 15 -> new ClusterCommand.NodeFailed(node, at - 1, 10 + rnd.nextDouble() * 5, "phi", at);
            case 16 -> new ClusterCommand.NodeRecovered(node, rnd.nextBoolean(), at, at);
            // Shutdown is left to the end of the run: once TERMINATED, everything else is refused.
            default -> new ClusterCommand.CleanupCompleted(at);
        };
    }

    /** One to four events: tasks starting, and tasks (any, running or not, known or not) ending. */
    private static ClusterCommand.TasksRecorded tasksRecorded(Random rnd, ClusterState s, String task, long at) {
        List<TaskEvent> events = new ArrayList<>();
        for (int k = 0, n = 1 + rnd.nextInt(4); k < n; k++) {
            events.add(switch (rnd.nextInt(3)) {
                case 0 -> new TaskEvent.Started(task + "-" + k, 3, at);
                case 1 -> new TaskEvent.Finished(anyTask(rnd, s, task), List.of(5L, 2L), "stop", at);
                default -> new TaskEvent.Failed(anyTask(rnd, s, task), "boom", at);
            });
        }
        return new ClusterCommand.TasksRecorded("coordinator-" + rnd.nextInt(2), at, events, at);
    }

    private static String anyTask(Random rnd, ClusterState s, String fallback) {
        List<String> ids = new ArrayList<>(s.tasks().keySet());
        return ids.isEmpty() ? fallback : ids.get(rnd.nextInt(ids.size()));
    }

    private static List<StageAssignment> stages(Random rnd) {
        List<String> nodes = new ArrayList<>(NODES);
        java.util.Collections.shuffle(nodes, rnd);
        int k = 1 + rnd.nextInt(nodes.size());
        List<StageAssignment> out = new ArrayList<>();
        for (int i = 0; i < k; i++) {
            out.add(new StageAssignment(nodes.get(i), i * 2, i * 2 + 2, i == 0, i == k - 1));
        }
        return out;
    }
}
