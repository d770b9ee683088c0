package io.butterfly.coordinator.reconcile;

import io.butterfly.coordinator.cluster.NodeInfo;
import java.util.List;
import java.util.Optional;

/** The workers discovery admitted (gateway/discovery implements it). */
public interface WorkerDirectory {

    /** The workers that joined, as discovery lists them now; empty while discovery cannot be reached. */
    Optional<List<NodeInfo>> joinedWorkers();
}
