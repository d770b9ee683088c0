package io.butterfly.worker.partition;

import io.butterfly.worker.cluster.Endpoint;
import java.util.List;

/** The coordinator replicas this worker reports its partition's load to and heartbeats to. */
public interface Coordinators {

    /** An assignment names its coordinator and (where replicated) every coordinator replica. */
    void attach(Endpoint coordinator, List<Endpoint> replicas, long epoch);

    /** The partition of {@code epoch} is loaded and READY (0: none); heartbeats carry it. */
    void partitionReady(long epoch);

    /** Queues a report; reports reach the coordinators in the order they were made. */
    void report(LoadReport report);
}
