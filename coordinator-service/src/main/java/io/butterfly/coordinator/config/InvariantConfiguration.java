package io.butterfly.coordinator.config;

import io.butterfly.coordinator.invariants.CoordinatorClaim;
import io.butterfly.coordinator.invariants.CoordinatorClaims;
import java.util.List;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration
public class InvariantConfiguration {

    /** A single coordinator leads alone in one term and receives every heartbeat. */
    @Bean
    CoordinatorClaims coordinatorClaims(CoordinatorProperties props) {
        return new CoordinatorClaims() {
            @Override
            public List<CoordinatorClaim> claims() {
                return List.of(new CoordinatorClaim(props.nodeId(), true, 1));
            }

            @Override
            public boolean receivesHeartbeats() {
                return true;
            }
        };
    }
}
