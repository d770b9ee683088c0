package io.butterfly.coordinator.bootstrap;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.Feasibility;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.config.PlanningProperties;
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
import org.springframework.stereotype.Component;

/**
 * Feasibility check and plan before an assignment (initialization-and-bootstrap.md §5.1, §7.6): the
 * verdict goes into the log either way; an infeasible cluster gets no plan (InsufficientResources in
 * the system state, naming need and capacity) and so no assignment is sent.
 */
@Component
public class AssignmentPlanning {

    private static final Logger log = LoggerFactory.getLogger(AssignmentPlanning.class);

    private final PartitionPlanner planner;
    private final PlanningProperties props;
    private final ControlLog control;
    private final Clock clock;

    public AssignmentPlanning(PartitionPlanner planner, PlanningProperties props, ControlLog control, Clock clock) {
        this.planner = planner;
        this.props = props;
        this.control = control;
        this.clock = clock;
    }

    /** The plan for these members, or null when the cluster cannot hold the model (recorded in the state). */
    public PartitionPlan plan(ServedModel model, List<NodeInfo> members) {
        List<WorkerCapacity> workers = members.stream()
                .map(m -> new WorkerCapacity(m.nodeId(), Math.max(m.throughput(), 1e-3), m.memoryBytes()))
                .toList();
        ModelFootprint footprint = ModelFootprints.of(model.manifest(), model.config(), props.planning());
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
        control.submit(new ClusterCommand.FeasibilityAssessed(new Feasibility(props.planner().configName(),
                report.feasible(), report.requiredBytes(), report.availableBytes(), report.reason(), now), now));
        if (plan == null) {
            log.error("not assigning model {}: {}", model.manifest().modelId(), report.reason());
        } else {
            log.info("{} plan for {}: {} ({})", props.planner().configName(), model.manifest().modelId(),
                    plan.stages(), report.reason());
        }
        return plan;
    }
}
