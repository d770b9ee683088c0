package io.butterfly.coordinator.control;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * The single place cluster decisions are applied: each command gets the next log index and goes
 * through the pure reducer. On one replica this is an in-process log; the Raft-replicated version
 * (Apache Ratis) will put the same commands and reducer behind consensus without changing callers.
 */
@Component
public class ControlLog {

    private static final Logger log = LoggerFactory.getLogger(ControlLog.class);

    private ClusterState state = ClusterState.initial();
    private long lastIndex;

    /** Applies a command; a rejected command (illegal transition) leaves the state and index untouched. */
    public synchronized ClusterState submit(ClusterCommand command) {
        ClusterState next = ClusterReducer.apply(state, command, lastIndex + 1);
        lastIndex++;
        if (next.system() != state.system()) {
            log.info("system {} -> {} (index {}, trigger {})", state.system(), next.system(), lastIndex,
                    command.getClass().getSimpleName());
        }
        state = next;
        return next;
    }

    public synchronized ClusterState state() {
        return state;
    }
}
