package io.butterfly.coordinator.config;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.RecoveryPhase;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.planning.PartitionPlanner;
import io.butterfly.coordinator.statemachine.SystemState;
import java.time.Clock;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration
public class CoordinatorConfiguration {

    /** The wall clock; a test harness may register its own first (a skewed one: clock-skew faults). */
    @Bean
    @ConditionalOnMissingBean(Clock.class)
    Clock clock() {
        return Clock.systemUTC();
    }

    /** {@code butterfly.coordinator.planner}: capacity-weighted (default) or optimal. */
    @Bean
    PartitionPlanner partitionPlanner(PlanningProperties planning) {
        return planning.planner().create();
    }

    /**
     * Readiness of a coordinator = the cluster serves or will again by itself: READY, or DEGRADED while it recovers
     * (docs/architecture.md); not while it waits for capacity or for an operator. And this replica holds the served
     * model's tokenizer and config (a follower fetches them just after the cluster became READY).
     */
    @Bean
    HealthIndicator clusterHealthIndicator(ControlLog control, ModelCatalog catalog) {
        return () -> {
            ClusterState state = control.state();
            SystemState s = state.system();
            RecoveryPhase recovery = state.recoveryPhase();
            boolean serving = state.servesOrRecovers();
            boolean modelHeld = state.merkleRoot() != null && catalog.holds(state.merkleRoot());
            Health.Builder health = (serving && modelHeld ? Health.up() : Health.outOfService())
                    .withDetail("system_state", s.name()).withDetail("model_held", modelHeld);
            if (recovery != null) {
                health.withDetail("recovery", recovery.name()).withDetail("reason", state.statusMessage());
            }
            return health.build();
        };
    }
}
