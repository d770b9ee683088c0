package io.butterfly.coordinator.reconcile;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.planning.WorkerCapacity;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the planners know of workers: measured throughput and memory. Workers on one host with the same core count
 * measured the same cores, each at its own moment of the host's load: three identical workers starting together
 * measured 22, 33 and 60 GFLOP/s (docs/initialization-and-bootstrap.md §2.3), and one paused during its probe measures
 * next to nothing, which gave the 8B in 4 bits layers split 10/21/1. A probe's measurement can only be lowered by
 * what else runs, so each such worker is planned at its host's best measurement.
 */
final class WorkerCapacities {

    private WorkerCapacities() {
    }

    static List<WorkerCapacity> of(ClusterState s, List<String> ids) {
        Map<String, Double> hostBest = new HashMap<>();
        for (var n : s.nodes().values()) {
            hostBest.merge(hostKey(n.info()), n.info().throughput(), Math::max);
        }
        return ids.stream().map(id -> s.nodes().get(id).info())
                .map(m -> new WorkerCapacity(m.nodeId(), Math.max(hostBest.get(hostKey(m)), 1e-3), m.memoryBytes()))
                .toList();
    }

    /** Workers that share this key share a CPU; a node that reported no host shares it with no one. */
    private static String hostKey(NodeInfo n) {
        return n.host() == null || n.host().isBlank() ? "node:" + n.nodeId() : n.host() + "/" + n.cpuCores();
    }
}
