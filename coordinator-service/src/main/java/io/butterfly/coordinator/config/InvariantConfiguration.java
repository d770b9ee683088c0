package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ReplicaView;
import io.butterfly.coordinator.invariants.CoordinatorClaim;
import io.butterfly.coordinator.invariants.CoordinatorClaims;
import java.util.List;
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
}
