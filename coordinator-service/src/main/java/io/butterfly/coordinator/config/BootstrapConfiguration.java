package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.gateway.discovery.DiscoveryGateway;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ReplicaModelLoader;
import io.butterfly.coordinator.planning.PartitionPlanner;
import io.butterfly.coordinator.reconcile.ControlLoop;
import io.butterfly.coordinator.reconcile.Drains;
import io.butterfly.coordinator.reconcile.Reconciler;
import io.butterfly.coordinator.reconcile.WorkerDirectory;
import io.butterfly.coordinator.reconcile.Workers;
import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The leader's control plane (bootstrap, re-plans, reloads, validation, drains), and every replica's copy of the served model. */
@Configuration
public class BootstrapConfiguration {

    @Bean
    Reconciler reconciler(CoordinatorProperties props, PlanningProperties planning, PartitionPlanner planner) {
        return new Reconciler(props.reconciler(DiscoveryGateway.protocolVersion(), planning.planner().configName())
                .withExpertGroups(planning.planning().expertGroups()).withHeadShards(planning.planning().headShards())
                .withPipelines(planning.planning().pipelines(), planning.planning().spares()), planner);
    }

    /** Commits its no-op as soon as this replica leads, even while the application is still starting. */
    @Bean(initMethod = "commitNoOpOnLeadership", destroyMethod = "close")
    ControlLoop controlLoop(Reconciler reconciler, ControlLog control, ModelCatalog catalog, PlanningProperties planning,
                            Workers workers, WorkerDirectory directory, Clock clock) {
        return new ControlLoop(reconciler, control, catalog, planning.planning().footprint(), workers, directory, clock);
    }

    @Bean
    Drains drains(ControlLog control, ModelCatalog catalog, PlanningProperties planning, PartitionPlanner planner,
                  Clock clock) {
        return new Drains(control, catalog, planning.planning().footprint(), planner, clock);
    }

    @Bean(destroyMethod = "close")
    ReplicaModelLoader replicaModelLoader(ControlLog control, ModelCatalog catalog) {
        return new ReplicaModelLoader(control, catalog);
    }
}
