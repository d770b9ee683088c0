package io.butterfly.coordinator.reconcile;

import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.integrity.PartitionReport;
import java.time.Duration;

/**
 * The workers as the leader's control plane uses them (gateway/worker implements it). A call a worker does not take
 * (unreachable, too slow, or refused) is a {@link WorkerCallFailedException}.
 */
public interface Workers {

    /** Tells {@code worker} its partition; a repeat of its current one keeps what it loaded. */
    void assign(NodeInfo worker, Assignment assignment, Duration deadline);

    /** Connects to {@code worker} again at once, without waiting out the backoff its earlier absence caused. */
    void reconnect(NodeInfo worker);

    /** The digests of the partition {@code worker} loaded for {@code epoch} (docs/bootstrap-protocol.md §6.5). */
    PartitionReport checksums(NodeInfo worker, long epoch, Duration deadline);

    /** Tells {@code worker} the cross-validation's verdict. */
    void announceValidation(NodeInfo worker, WeightValidation validation, Duration deadline);

    /**
     * Tells {@code worker}, drained and holding no stage of {@code epoch}, to leave the cluster: it frees what it loaded
     * and leaves discovery. Fenced like an assignment.
     */
    void dismiss(NodeInfo worker, long epoch, long term, Duration deadline);
}
