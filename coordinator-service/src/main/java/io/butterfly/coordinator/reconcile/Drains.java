package io.butterfly.coordinator.reconcile;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.planning.InfeasiblePlanException;
import io.butterfly.coordinator.planning.ModelFootprints;
import io.butterfly.coordinator.planning.PartitionPlanner;
import io.butterfly.coordinator.statemachine.SystemState;
import java.time.Clock;
import java.util.HashSet;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * An operator's drain of a worker ({@code POST /api/v1/nodes/{id}/drain}): the planned version of a lost stage. Checked
 * here before it is committed, so that a drain the cluster cannot absorb is refused with the reason (need against
 * capacity) rather than leaving the system DEGRADED; the leader's control loop then plans the node's stage away and,
 * once that plan serves READY, lets the node go.
 */
public class Drains {

    private final ControlLog control;
    private final ModelCatalog catalog;
    private final ModelFootprints.Settings footprint;
    private final PartitionPlanner planner;
    private final Clock clock;

    public Drains(ControlLog control, ModelCatalog catalog, ModelFootprints.Settings footprint, PartitionPlanner planner,
                  Clock clock) {
        this.control = control;
        this.catalog = catalog;
        this.footprint = footprint;
        this.planner = planner;
        this.clock = clock;
    }

    /**
     * Asks for {@code nodeId} to be drained; a node draining already is left so (the request is idempotent).
     *
     * @return the state once the request is committed
     * @throws NoSuchElementException no worker has that id
     * @throws DrainRefusedException  the cluster cannot re-plan without it, or is in no state to
     */
    public ClusterState request(String nodeId) {
        ClusterState s = control.state();
        NodeRecord node = s.nodes().get(nodeId);
        if (node == null) {
            throw new NoSuchElementException("no worker '" + nodeId + "' in the cluster");
        }
        if (s.draining().contains(nodeId)) {
            return s;
        }
        if (s.system() != SystemState.READY && s.system() != SystemState.DEGRADED
                && s.system() != SystemState.BOOTSTRAPPING) {
            throw new DrainRefusedException("the cluster is " + s.system() + ": nothing can be drained now");
        }
        if (s.planned().contains(nodeId) && !node.lost()) {
            checkStageHasSomewhereToGo(s, nodeId);
        }
        try {
            return control.submit(new ClusterCommand.NodeDrainRequested(nodeId, clock.millis()));
        } catch (IllegalTransitionException e) {
            throw new DrainRefusedException(e.getMessage());
        }
    }

    /** The re-plan the leader would make without the node: refused as it would be, with the same reason. */
    private void checkStageHasSomewhereToGo(ClusterState s, String nodeId) {
        ServedModel model = catalog.servedFor(s.merkleRoot());
        Set<String> lost = new HashSet<>(s.lostStages());
        lost.add(nodeId);
        try {
            Reconciler.replan(s, ModelFootprints.of(model.manifest(), model.config(), footprint, s.widestWeightBytes()),
                    io.butterfly.coordinator.planning.ExpertFootprint.of(model.config(), s.widestWeightBytes()), lost,
                    planner);
        } catch (InfeasiblePlanException e) {
            throw new DrainRefusedException("draining '" + nodeId + "' would leave the cluster unable to serve: "
                    + e.getMessage(), e);
        }
    }
}
