package io.butterfly.coordinator.config;

import io.butterfly.coordinator.bootstrap.AssignmentPlanning;
import io.butterfly.coordinator.bootstrap.BootstrapOrchestrator;
import io.butterfly.coordinator.bootstrap.CrossValidator;
import io.butterfly.coordinator.bootstrap.LeaderTakeover;
import io.butterfly.coordinator.bootstrap.ReplicaModelLoader;
import io.butterfly.coordinator.bootstrap.StageReloader;
import io.butterfly.coordinator.bootstrap.WorkerDirectory;
import io.butterfly.coordinator.bootstrap.Workers;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.LivenessMonitor;
import io.butterfly.coordinator.gateway.discovery.DiscoveryGateway;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.planning.PartitionPlanner;
import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The leader's bootstrap and upkeep of the assignment, and every replica's copy of the served model. */
@Configuration
public class BootstrapConfiguration {

    @Bean
    AssignmentPlanning assignmentPlanning(PartitionPlanner planner, PlanningProperties planning, ControlLog control,
                                          Clock clock) {
        return new AssignmentPlanning(planner, planning.planner().configName(), planning.planning().footprint(),
                control, clock);
    }

    /** Commits its no-op as soon as this replica leads, even while the application is still starting. */
    @Bean(initMethod = "commitNoOpOnLeadership", destroyMethod = "close")
    LeaderTakeover leaderTakeover(ControlLog control, Workers workers) {
        return new LeaderTakeover(control, workers);
    }

    @Bean(destroyMethod = "close")
    BootstrapOrchestrator bootstrapOrchestrator(CoordinatorProperties props, ControlLog control, ModelCatalog catalog,
                                                AssignmentPlanning planning, Workers workers,
                                                WorkerDirectory directory, Clock clock, LeaderTakeover takeover) {
        return new BootstrapOrchestrator(props.bootstrap(DiscoveryGateway.protocolVersion()), control, catalog, planning, workers, directory, clock,
                takeover);
    }

    @Bean(destroyMethod = "close")
    CrossValidator crossValidator(ControlLog control, ModelCatalog catalog, Workers workers, Clock clock) {
        return new CrossValidator(control, catalog, workers, clock);
    }

    @Bean(destroyMethod = "close")
    StageReloader stageReloader(ControlLog control, Workers workers, LivenessMonitor monitor) {
        return new StageReloader(control, workers, monitor);
    }

    @Bean(destroyMethod = "close")
    ReplicaModelLoader replicaModelLoader(ControlLog control, ModelCatalog catalog) {
        return new ReplicaModelLoader(control, catalog);
    }
}
