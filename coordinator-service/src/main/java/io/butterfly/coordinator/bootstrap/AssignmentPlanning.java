package io.butterfly.coordinator.bootstrap;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.Feasibility;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.planning.FeasibilityCheck;
import io.butterfly.coordinator.planning.FeasibilityReport;
import io.butterfly.coordinator.planning.InfeasiblePlanException;
import io.butterfly.coordinator.planning.ModelFootprint;
import io.butterfly.coordinator.planning.PartitionPlan;
import io.butterfly.coordinator.planning.PartitionPlanner;
import io.butterfly.coordinator.planning.WorkerCapacity;
import java.time.Clock;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feasibility check and plan before an assignment (docs/initialization-and-bootstrap.md §5.1, §7.6): the
 * verdict goes into the log either way; an infeasible cluster gets no plan (InsufficientResources in
 * the system state, naming need and capacity) and so no assignment is sent.
 */
public class AssignmentPlanning {

    private static final Logger log = LoggerFactory.getLogger(AssignmentPlanning.class);

    private final PartitionPlanner planner;
    private final String plannerName;
    private final ModelFootprints.Settings footprint;
    private final ControlLog control;
    private final Clock clock;

    /** @param plannerName the planner as configured ({@code butterfly.coordinator.planner}), recorded with its verdict */
    public AssignmentPlanning(PartitionPlanner planner, String plannerName, ModelFootprints.Settings footprint,
                              ControlLog control, Clock clock) {
        this.planner = planner;
        this.plannerName = plannerName;
        this.footprint = footprint;
        this.control = control;
        this.clock = clock;
    }

    /** The plan for these members, or null when the cluster cannot hold the model (recorded in the state). */
    public PartitionPlan plan(ServedModel model, List<NodeInfo> members) {
        List<WorkerCapacity> workers = members.stream()
                .map(m -> new WorkerCapacity(m.nodeId(), Math.max(m.throughput(), 1e-3), m.memoryBytes()))
                .toList();
        // Every stage must fit whichever worker it lands on: size the weights as the widest of them holds them.
        int weightBytes = members.stream().mapToInt(m -> m.weightBytes() > 0 ? m.weightBytes() : Float.BYTES).max()
                .orElse(Float.BYTES);
        ModelFootprint footprint = ModelFootprints.of(model.manifest(), model.config(), this.footprint, weightBytes);
        FeasibilityReport report = FeasibilityCheck.check(footprint, workers);
        PartitionPlan plan = null;
        if (report.feasible()) {
            try {
                plan = planner.plan(footprint, workers);
            } catch (InfeasiblePlanException e) {
                report = FeasibilityReport.infeasible(e); // enough memory in total, but not in the right places
            }
        }
        long now = clock.millis();
        control.submit(new ClusterCommand.FeasibilityAssessed(new Feasibility(plannerName,
                report.feasible(), report.requiredBytes(), report.availableBytes(), report.reason(), now), now));
        if (plan == null) {
            log.error("not assigning model {}: {}", model.manifest().modelId(), report.reason());
        } else {
            log.info("{} plan for {}: {} ({})", plannerName, model.manifest().modelId(),
                    plan.stages(), report.reason());
        }
        return plan;
    }
}
