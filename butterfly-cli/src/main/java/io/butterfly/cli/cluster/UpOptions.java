package io.butterfly.cli.cluster;

import java.nio.file.Path;
import java.util.List;

/**
 * What {@code up} starts.
 *
 * @param workers      worker processes (1-99)
 * @param model        the model directory, or null for the generated demo model
 * @param planner      the partition planner, or null for the coordinator's default
 * @param workerMemory per-worker memory limits (the i-th for worker-i; missing or empty: the machine's)
 * @param coordinators coordinator replicas, one Raft group (1-3)
 * @param transfer     how workers get their shards
 */
public record UpOptions(int workers, Path model, String planner, List<String> workerMemory, int coordinators,
                        Transfer transfer) {

    /**
     * Shared: workers copy their shards from the registry's store (on this machine they see it) and check each
     * against the signed manifest. Stream: they stream them over loopback gRPC, as across machines.
     */
    public enum Transfer { SHARED, STREAM }

    public UpOptions {
        workerMemory = List.copyOf(workerMemory);
    }

    /** The defaults: 3 workers, the demo model, one coordinator. */
    public static UpOptions defaults() {
        return new UpOptions(3, null, null, List.of(), 1, Transfer.SHARED);
    }

    public UpOptions withWorkers(int n) {
        return new UpOptions(n, model, planner, workerMemory, coordinators, transfer);
    }

    public UpOptions withModel(Path m) {
        return new UpOptions(workers, m, planner, workerMemory, coordinators, transfer);
    }

    public UpOptions withCoordinators(int n) {
        return new UpOptions(workers, model, planner, workerMemory, n, transfer);
    }

    public UpOptions withPlanner(String p) {
        return new UpOptions(workers, model, p, workerMemory, coordinators, transfer);
    }

    public UpOptions withTransfer(Transfer t) {
        return new UpOptions(workers, model, planner, workerMemory, coordinators, t);
    }
}
