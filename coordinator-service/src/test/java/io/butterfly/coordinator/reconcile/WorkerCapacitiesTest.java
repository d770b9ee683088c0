package io.butterfly.coordinator.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.planning.CapacityWeightedPlanner;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.planning.WorkerCapacity;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Workers sharing a host's cores are planned at the host's best measurement; workers elsewhere at their own. */
class WorkerCapacitiesTest {

    private static NodeInfo worker(String id, String host, int cores, double gflops, long memory) {
        return new NodeInfo(id, "worker", host, 9000, 8000, cores, memory, gflops, "cpu");
    }

    private static ClusterState joined(NodeInfo... nodes) {
        ClusterState s = ClusterReducer.apply(ClusterState.initial(), new ClusterCommand.Bootstrap("m", 3, 1), 1);
        long index = 1;
        for (NodeInfo n : nodes) {
            s = ClusterReducer.apply(s, new ClusterCommand.NodeJoined(n, 1), ++index);
        }
        return s;
    }

    private static List<Double> gflops(List<WorkerCapacity> capacities) {
        return capacities.stream().map(WorkerCapacity::gflops).toList();
    }

    @Test
    void workersOfOneHostArePlannedAtItsBestMeasurement() {
        // The three workers of ./butterfly up on one 2-core machine, one of them paused while it measured.
        ClusterState s = joined(worker("worker-0", "127.0.0.1", 2, 22, 8L << 30),
                worker("worker-1", "127.0.0.1", 2, 60, 8L << 30), worker("worker-2", "127.0.0.1", 2, 0.4, 4L << 30),
                worker("gpu-box", "10.0.0.9", 2, 900, 8L << 30), worker("big-box", "127.0.0.1", 64, 500, 8L << 30),
                worker("anonymous", null, 2, 1, 8L << 30));
        List<WorkerCapacity> c = WorkerCapacities.of(s,
                List.of("worker-0", "worker-1", "worker-2", "gpu-box", "big-box", "anonymous"));
        assertThat(gflops(c)).containsExactly(60.0, 60.0, 60.0, 900.0, 500.0, 1.0);
        assertThat(c.get(2).memoryBytes()).isEqualTo(4L << 30); // memory stays each worker's own
        assertThat(c.stream().map(WorkerCapacity::nodeId)).containsExactly("worker-0", "worker-1", "worker-2",
                "gpu-box", "big-box", "anonymous");
    }

    /** Whatever each co-located worker measured (seeded), the plan is the one of equal workers. */
    @Test
    void coLocatedWorkersGetTheSamePlanWhateverTheirProbesMeasured() {
        Random random = new Random(46_53L);
        List<Integer> expected = List.of(11, 11, 10);
        for (int trial = 0; trial < 200; trial++) {
            ClusterState s = joined(worker("worker-0", "127.0.0.1", 2, 0.01 + random.nextDouble() * 60, 0),
                    worker("worker-1", "127.0.0.1", 2, 0.01 + random.nextDouble() * 60, 0),
                    worker("worker-2", "127.0.0.1", 2, 0.01 + random.nextDouble() * 60, 0));
            List<WorkerCapacity> c = WorkerCapacities.of(s, List.of("worker-0", "worker-1", "worker-2"));
            assertThat(new CapacityWeightedPlanner().plan(32, c).stages().stream().map(StageAssignment::numLayers)
                    .toList()).as("trial %d: %s", trial, c).isEqualTo(expected);
        }
    }
}
