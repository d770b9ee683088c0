package io.butterfly.coordinator.bootstrap;

import io.butterfly.coordinator.cluster.NodeInfo;
import java.util.List;

/** The workers discovery admitted (gateway/discovery implements it). */
public interface WorkerDirectory {

    /** The workers that joined, as discovery lists them now; none while discovery cannot be reached. */
    List<NodeInfo> joinedWorkers();
}
