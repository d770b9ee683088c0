package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.invariants.CoordinatorClaim;
import io.butterfly.coordinator.invariants.CoordinatorClaims;
import io.butterfly.coordinator.raft.RaftStatus;
import java.util.List;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration
public class InvariantConfiguration {

    /**
     * This replica's own Raft view: whether it leads and in which term. Workers report to and heartbeat the
     * leader, so only the leader judges liveness-based invariants.
     */
    @Bean
    CoordinatorClaims coordinatorClaims(ControlLog control) {
        return new CoordinatorClaims() {
            @Override
            public List<CoordinatorClaim> claims() {
                RaftStatus raft = control.raftStatus();
                return List.of(new CoordinatorClaim(raft.selfId(), "LEADER".equals(raft.role()), raft.term()));
            }

            @Override
            public boolean receivesHeartbeats() {
                return "LEADER".equals(control.raftStatus().role());
            }
        };
    }
}
