package io.butterfly.coordinator.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.Feasibility;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.cluster.PartitionState;
import io.butterfly.coordinator.planning.StageAssignment;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;
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
                        new StageAssignment("w-2", 6, 12, false, true)), at),
                new ClusterCommand.LoadProgressed("w-1", 3, PartitionState.values()[1 + rnd.nextInt(4)],
                        rnd.nextDouble(), rnd.nextBoolean() ? null : "model.safetensors", at),
                new ClusterCommand.LoadCompleted("w-1", 3, rnd.nextBoolean() ? null : s, at),
                new ClusterCommand.LoadFailed("w-1", 3, "PARTITION_CHECKSUM_MISMATCH", null, at),
                new ClusterCommand.TaskSubmitted("t-" + s, rnd.nextInt(2048), "coordinator-" + rnd.nextInt(3), at - rnd.nextInt(10_000), at),
                new ClusterCommand.TaskFinished("t-" + s, rnd.longs(rnd.nextInt(8), 0, 32000).boxed().toList(), "length", at),
                new ClusterCommand.TaskFailed("t-" + s, null, at),
                new ClusterCommand.Shutdown(rnd.nextBoolean() ? null : "operator", at),
                new ClusterCommand.CleanupCompleted(at),
                new ClusterCommand.NodeSuspected("w-" + s, at - 500, rnd.nextDouble() * 10,
                        rnd.nextBoolean() ? null : "phi above threshold", at),
                new ClusterCommand.NodeSuspicionCleared("w-" + s, at - 1, at),
                new ClusterCommand.NodeFailed("w-" + s, at - 900, rnd.nextDouble() * 20, "stream closed", at),
                new ClusterCommand.NodeRecovered("w-" + s, rnd.nextBoolean(), at - 2, at),
                new ClusterCommand.FeasibilityAssessed(new Feasibility(rnd.nextBoolean() ? null : "optimal",
                        rnd.nextBoolean(), rnd.nextLong(1L << 40), rnd.nextLong(1L << 40),
                        rnd.nextBoolean() ? null : "InsufficientResources: need 2 GiB, have 1 GiB", at), at),
                new ClusterCommand.WeightsValidated(new WeightValidation(rnd.nextInt(50),
                        WeightValidation.Status.values()[rnd.nextInt(3)], rnd.nextBoolean() ? null : "ab" + s,
                        rnd.nextBoolean() ? null : "cd" + s, List.of("w-1"), rnd.nextBoolean() ? List.of() : List.of("w-2"),
                        List.of("w-2: layer_001.safetensors sha256 differs"), at), at),
                new ClusterCommand.Checkpoint(rnd.nextInt(50), "ab" + s, at),
                new ClusterCommand.NoOp("coordinator-" + rnd.nextInt(3), rnd.nextInt(100), at));
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

    /** The exhaustiveness check: a new ClusterCommand variant without a sample (and a mapping) fails here. */
    @Test
    void samplesCoverEverySealedVariant() {
        Set<Class<?>> permitted = Arrays.stream(ClusterCommand.class.getPermittedSubclasses()).collect(Collectors.toSet());
        Set<Class<?>> sampled = samples(new Random(1)).stream().map(Object::getClass).collect(Collectors.toSet());
        assertThat(sampled).containsExactlyInAnyOrderElementsOf(permitted);
    }

    @Test
    void rejectsCorruptAndEmptyEntries() {
        assertThatThrownBy(() -> ControlCommandMapper.deserialize(new byte[] {(byte) 0xff, 0x01}))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ControlCommandMapper.deserialize(new byte[0]))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
