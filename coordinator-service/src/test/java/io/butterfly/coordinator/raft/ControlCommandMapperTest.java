package io.butterfly.coordinator.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.Feasibility;
import io.butterfly.coordinator.cluster.JobRecord;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRequest;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class ControlCommandMapperTest {

    private static List<ClusterCommand> samples(Random rnd) {
        long at = rnd.nextLong(1, Long.MAX_VALUE);
        String s = "x" + rnd.nextInt(1000);
        return List.of(
                new ClusterCommand.Bootstrap("gpt2-" + s, 1 + rnd.nextInt(8), at),
                new ClusterCommand.ConfigChange(new io.butterfly.coordinator.cluster.ClusterConfig("c-" + s,
                        1 + rnd.nextInt(9), rnd.nextInt(3), rnd.nextInt(20), "1." + rnd.nextInt(4) + ".0"), at),
                new ClusterCommand.ModelResolved("m", "ab" + s, at),
                new ClusterCommand.NodeJoined(new NodeInfo("w-" + s, "worker", "127.0.0.1", 9000 + rnd.nextInt(99),
                        8000, 4, rnd.nextLong(1, 1L << 40), rnd.nextDouble() * 100, null), at),
                new ClusterCommand.PartitionsAssigned(rnd.nextInt(50), List.of(
                        new StageAssignment("w-1", 0, 6, true, false),
                        new StageAssignment("w-2", 6, 12, false, true)), rnd.nextBoolean() ? "" : "w-3 FAILED", at),
                new ClusterCommand.NodeDrainRequested("w-" + s, at),
                new ClusterCommand.NodeLeft("w-" + s, rnd.nextBoolean() ? "" : "drained", at),
                new ClusterCommand.LoadProgressed("w-1", 3, PartitionState.values()[1 + rnd.nextInt(4)],
                        rnd.nextDouble(), rnd.nextBoolean() ? null : "model.safetensors", at),
                new ClusterCommand.LoadCompleted("w-1", 3, rnd.nextBoolean() ? null : s, rnd.nextLong(0, 1L << 40), at),
                new ClusterCommand.LoadFailed("w-1", 3, "PARTITION_CHECKSUM_MISMATCH", null, at),
                new ClusterCommand.TaskSubmitted("t-" + s, rnd.nextInt(2048), "coordinator-" + rnd.nextInt(3), at - rnd.nextInt(10_000), at),
                new ClusterCommand.TaskFinished("t-" + s, rnd.longs(rnd.nextInt(8), 0, 32000).boxed().toList(), "length", at),
                new ClusterCommand.TaskFailed("t-" + s, null, at),
                new ClusterCommand.TasksRecorded("coordinator-" + rnd.nextInt(3), at - rnd.nextInt(10_000), List.of(
                        new TaskEvent.Started("t-" + s, rnd.nextInt(2048), at - 5),
                        new TaskEvent.Finished("t-" + s, rnd.longs(rnd.nextInt(8), 0, 32000).boxed().toList(), "stop", at - 2),
                        new TaskEvent.Failed("u-" + s, rnd.nextBoolean() ? null : "the client closed the stream", at - 1)),
                        at),
                new ClusterCommand.Shutdown(rnd.nextBoolean() ? null : "operator", at),
                new ClusterCommand.CleanupCompleted(at),
                new ClusterCommand.NodeSuspected("w-" + s, at - 500, rnd.nextDouble() * 10,
                        rnd.nextBoolean() ? null : "phi above threshold", at),
                new ClusterCommand.NodeSuspicionCleared("w-" + s, at - 1, at),
                new ClusterCommand.NodeFailed("w-" + s, at - 900, rnd.nextDouble() * 20, "stream closed", at),
                new ClusterCommand.NodeRecovered("w-" + s, rnd.nextBoolean(), at - 2, at),
                new ClusterCommand.NodeByzantine("w-" + s, "step " + s + ": w-1 computed seq=00000000000000aa", at),
                new ClusterCommand.FeasibilityAssessed(new Feasibility(rnd.nextBoolean() ? null : "optimal",
                        rnd.nextBoolean(), rnd.nextLong(1L << 40), rnd.nextLong(1L << 40),
                        rnd.nextBoolean() ? null : "InsufficientResources: need 2 GiB, have 1 GiB", at), at),
                new ClusterCommand.WeightsValidated(new WeightValidation(rnd.nextInt(50),
                        WeightValidation.Status.values()[rnd.nextInt(3)], rnd.nextBoolean() ? null : "ab" + s,
                        rnd.nextBoolean() ? null : "cd" + s, List.of("w-1"), rnd.nextBoolean() ? List.of() : List.of("w-2"),
                        List.of("w-2: layer_001.safetensors sha256 differs"), at), at),
                new ClusterCommand.Checkpoint(rnd.nextInt(50), "ab" + s, at),
                new ClusterCommand.NoOp("coordinator-" + rnd.nextInt(3), rnd.nextInt(100), at),
                new ClusterCommand.JobDefined(new JobRecord("job-" + rnd.nextInt(99), "ab".repeat(32),
                        1 + rnd.nextInt(1000), 1 + rnd.nextInt(64), rnd.nextLong(), 1 + rnd.nextInt(256),
                        rnd.nextDouble() * 2, 0.5 + rnd.nextDouble() / 2, rnd.nextInt(50), at), at),
                new ClusterCommand.JobBatchLeased("job-" + s, rnd.nextLong(), rnd.nextBoolean() ? -1 : rnd.nextInt(99),
                        "coordinator/" + s, 1 + rnd.nextInt(600_000), at),
                new ClusterCommand.JobResultRecorded("job-" + s, rnd.nextLong(), rnd.nextInt(99),
                        ("result " + s).getBytes(java.nio.charset.StandardCharsets.UTF_8), at));
    }

    @Test
    void everyCommandRoundTripsThroughTheLogEncoding() {
        Random rnd = new Random(42);
        for (int round = 0; round < 50; round++) {
            for (ClusterCommand command : samples(rnd)) {
                byte[] bytes = ControlCommandMapper.serialize(command);
                assertThat(ControlCommandMapper.deserialize(bytes)).isEqualTo(command);
            }
        }
    }

    /**
     * Every field of every command, drawn at random (optional text absent, empty or non-ASCII; extreme and
     * non-finite numbers), survives the log encoding: a field the mapping dropped would differ here.
     */
    @Test
    void everyFieldOfEveryCommandRoundTrips() {
        Random rnd = new Random(7);
        Set<Class<?>> seen = new java.util.HashSet<>();
        for (int round = 0; round < 2000; round++) {
            ClusterCommand command = anyCommand(rnd);
            seen.add(command.getClass());
            assertThat(ControlCommandMapper.deserialize(ControlCommandMapper.serialize(command))).as("%s", command)
                    .isEqualTo(command);
        }
        assertThat(seen).containsExactlyInAnyOrder(ClusterCommand.class.getPermittedSubclasses());
    }

    private static ClusterCommand anyCommand(Random r) {
        long at = anyLong(r);
        return switch (r.nextInt(28)) {
            case 0 -> new ClusterCommand.Bootstrap(text(r), 1 + r.nextInt(Integer.MAX_VALUE), at);
            case 1 -> new ClusterCommand.ConfigChange(new io.butterfly.coordinator.cluster.ClusterConfig(text(r),
                    r.nextInt(), r.nextInt(), r.nextInt(), text(r)), at);
            case 2 -> new ClusterCommand.ModelResolved(text(r), text(r), at);
            case 3 -> new ClusterCommand.NodeJoined(new NodeInfo("w" + text(r), maybe(r), maybe(r), r.nextInt(), r.nextInt(),
                    r.nextInt(), anyLong(r), anyDouble(r), maybe(r), r.nextInt(5)), at);
            case 4 -> new ClusterCommand.PartitionsAssigned(anyLong(r), r.ints(r.nextInt(4), 0, 1000).mapToObj(i ->
                    new StageAssignment("w" + i + text(r), i, i + 1 + r.nextInt(50), r.nextBoolean(), r.nextBoolean())).toList(),
                    text(r), at);
            case 5 -> new ClusterCommand.LoadProgressed(text(r), anyLong(r),
                    PartitionState.values()[r.nextInt(PartitionState.values().length)], anyDouble(r), maybe(r), at);
            case 6 -> new ClusterCommand.LoadCompleted(text(r), anyLong(r), maybe(r), Math.max(0, anyLong(r)), at);
            case 7 -> new ClusterCommand.LoadFailed(text(r), anyLong(r), maybe(r), maybe(r), at);
            case 8 -> new ClusterCommand.TaskSubmitted(text(r), r.nextInt(), maybe(r), anyLong(r), at);
            case 9 -> new ClusterCommand.TaskFinished(text(r), r.longs(r.nextInt(6)).boxed().toList(), maybe(r), at);
            case 10 -> new ClusterCommand.TaskFailed(text(r), maybe(r), at);
            case 11 -> new ClusterCommand.Shutdown(maybe(r), at);
            case 12 -> new ClusterCommand.CleanupCompleted(at);
            case 13 -> new ClusterCommand.NodeSuspected(text(r), anyLong(r), anyDouble(r), maybe(r), at);
            case 14 -> new ClusterCommand.NodeSuspicionCleared(text(r), anyLong(r), at);
            case 15 -> new ClusterCommand.NodeFailed(text(r), anyLong(r), anyDouble(r), maybe(r), at);
            case 16 -> new ClusterCommand.NodeRecovered(text(r), r.nextBoolean(), anyLong(r), at);
            case 17 -> new ClusterCommand.FeasibilityAssessed(new Feasibility(maybe(r), r.nextBoolean(), anyLong(r),
                    anyLong(r), maybe(r), at), at);
            case 18 -> new ClusterCommand.WeightsValidated(new WeightValidation(anyLong(r),
                    WeightValidation.Status.values()[r.nextInt(3)], maybe(r), maybe(r), texts(r), texts(r), texts(r), at), at);
            case 19 -> new ClusterCommand.Checkpoint(anyLong(r), text(r), at);
            case 20 -> new ClusterCommand.TasksRecorded(text(r), anyLong(r),
                    java.util.stream.IntStream.range(0, r.nextInt(5)).mapToObj(i -> anyTaskEvent(r)).toList(), at);
            case 21 -> new ClusterCommand.NodeDrainRequested(text(r), at);
            case 22 -> new ClusterCommand.NodeLeft(text(r), text(r), at);
            case 23 -> new ClusterCommand.JobDefined(new JobRecord("j" + r.nextInt(1000), "0f".repeat(32),
                    1 + r.nextInt(Integer.MAX_VALUE), 1 + r.nextInt(Integer.MAX_VALUE), anyLong(r),
                    1 + r.nextInt(Integer.MAX_VALUE), r.nextBoolean() ? 0.0 : r.nextDouble() * 1e6, Math.nextUp(0.0)
                    + r.nextDouble() * (1 - Math.nextUp(0.0)), r.nextInt(Integer.MAX_VALUE), at, Math.max(1, anyLong(r))), at);
            case 24 -> new ClusterCommand.JobBatchLeased("j" + r.nextInt(1000), anyLong(r), anyLong(r), text(r),
                    1 + r.nextInt(Integer.MAX_VALUE), at);
            case 25 -> {
                byte[] data = new byte[r.nextInt(300)];
                r.nextBytes(data);
                yield new ClusterCommand.JobResultRecorded("j" + r.nextInt(1000), anyLong(r), anyLong(r), data, at);
            }
            case 26 -> new ClusterCommand.NodeByzantine(text(r), text(r), at);
            default -> new ClusterCommand.NoOp(text(r), anyLong(r), at);
        };
    }

    private static TaskEvent anyTaskEvent(Random r) {
        return switch (r.nextInt(8)) {
            case 0 -> new TaskEvent.Started(text(r), r.nextInt(), anyLong(r));
            case 1 -> new TaskEvent.Started(text(r), r.nextInt(), new TaskRequest(r.longs(r.nextInt(5)).boxed().toList(),
                    text(r), r.nextInt(), anyDouble(r), anyDouble(r), r.nextInt(), anyLong(r), r.nextInt(), r.nextBoolean(),
                    texts(r), maybe(r)), anyLong(r));
            case 2 -> new TaskEvent.Progressed(text(r), r.nextInt(1 << 20), IntStream.range(0, r.nextInt(4))
                    .mapToObj(i -> new TaskEvent.Token(anyLong(r), anyDouble(r), IntStream.range(0, r.nextInt(3))
                            .mapToObj(k -> new TaskEvent.Alternative(anyLong(r), anyDouble(r))).toList())).toList(),
                    anyLong(r));
            case 3 -> new TaskEvent.Paused(text(r), maybe(r), anyLong(r));
            case 4 -> new TaskEvent.Resumed(text(r), anyLong(r));
            case 5 -> new TaskEvent.Adopted(text(r), text(r), anyLong(r), anyLong(r));
            case 6 -> new TaskEvent.Finished(text(r), r.longs(r.nextInt(6)).boxed().toList(), maybe(r), anyLong(r));
            default -> r.nextBoolean() ? new TaskEvent.Failed(text(r), maybe(r), anyLong(r))
                    : new TaskEvent.Failed(text(r), maybe(r), text(r), anyLong(r), anyLong(r));
        };
    }

    private static String text(Random r) {
        return switch (r.nextInt(4)) {
            case 0 -> "";
            case 1 -> "w-" + r.nextInt(100);
            case 2 -> "n\u00f6de \u6a21\u578b \ud83e\udd8b";
            default -> Long.toHexString(r.nextLong());
        };
    }

    private static String maybe(Random r) {
        return r.nextInt(3) == 0 ? null : text(r);
    }

    private static List<String> texts(Random r) {
        return java.util.stream.IntStream.range(0, r.nextInt(3)).mapToObj(i -> text(r)).toList();
    }

    private static long anyLong(Random r) {
        long[] edges = {0, -1, Long.MIN_VALUE, Long.MAX_VALUE};
        return r.nextBoolean() ? edges[r.nextInt(edges.length)] : r.nextLong();
    }

    private static double anyDouble(Random r) {
        double[] edges = {0.0, -0.0, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.MIN_VALUE};
        return r.nextBoolean() ? edges[r.nextInt(edges.length)] : r.nextGaussian() * 1e6;
    }

    /** The exhaustiveness check: a new ClusterCommand variant without a sample (and a mapping) fails here. */
    @Test
    void samplesCoverEverySealedVariant() {
        Set<Class<?>> permitted = Arrays.stream(ClusterCommand.class.getPermittedSubclasses()).collect(Collectors.toSet());
        Set<Class<?>> sampled = samples(new Random(1)).stream().map(Object::getClass).collect(Collectors.toSet());
        assertThat(sampled).containsExactlyInAnyOrderElementsOf(permitted);
    }

    /** Entries written before budgets were reported (no field 4 in LoadCompletedCommand) read as 0, unknown. */
    @Test
    void aLoadCompletedWrittenBeforeBudgetsReadsAsUnknown() {
        byte[] old = io.butterfly.proto.coordinator.v1.ControlCommand.newBuilder().setAtMs(7)
                .setLoadCompleted(io.butterfly.proto.coordinator.v1.LoadCompletedCommand.newBuilder().setNodeId("w-1")
                        .setEpoch(3).setPartitionChecksum("c"))
                .build().toByteArray();
        assertThat(ControlCommandMapper.deserialize(old)).isEqualTo(new ClusterCommand.LoadCompleted("w-1", 3, "c", 0, 7));
    }

    @Test
    void rejectsCorruptAndEmptyEntries() {
        assertThatThrownBy(() -> ControlCommandMapper.deserialize(new byte[] {(byte) 0xff, 0x01}))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ControlCommandMapper.deserialize(new byte[0]))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
