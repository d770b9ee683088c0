package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.InvariantMonitor;
import io.butterfly.coordinator.control.Liveness;
import io.butterfly.coordinator.control.ReplicaView;
import io.butterfly.coordinator.invariants.CoordinatorClaim;
import io.butterfly.coordinator.invariants.CoordinatorClaims;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration
public class InvariantConfiguration {

    /**
     * Every replica's claim, each asked of that replica (whether it leads and in which term); one that does
     * not answer makes no claim. Only the leader judges liveness-based invariants.
     */
    @Bean
    CoordinatorClaims coordinatorClaims(ControlLog control) {
        return new CoordinatorClaims() {
            @Override
            public List<CoordinatorClaim> claims() {
                return control.replicaViews().stream()
                        .filter(v -> !ReplicaView.UNREACHABLE.equals(v.role()))
                        .map(v -> new CoordinatorClaim(v.replicaId(), v.leader(), v.term()))
                        .toList();
            }

            @Override
            public boolean receivesHeartbeats() {
                return "LEADER".equals(control.raftStatus().role());
            }
        };
    }

    /** Its confirmed violations are counted in the {@code butterfly.invariant.violations} gauge. */
    @Bean(initMethod = "start", destroyMethod = "close")
    InvariantMonitor invariantMonitor(ControlLog control, Liveness liveness, CoordinatorClaims claims,
                                      InvariantProperties props, Clock clock, ObjectProvider<MeterRegistry> meters) {
        InvariantMonitor monitor = new InvariantMonitor(control, liveness, claims, props.monitorSettings(), clock);
        meters.ifAvailable(m -> Gauge.builder("butterfly.invariant.violations", monitor,
                        x -> x.report().violations().size())
                .description("invariants of docs/state-machines.md §3.3 currently violated").register(m));
        return monitor;
    }
}
