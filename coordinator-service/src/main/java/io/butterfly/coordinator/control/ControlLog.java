package io.butterfly.coordinator.control;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.IllegalTransitionException;
import io.butterfly.coordinator.statemachine.TransitionHistory;
import io.butterfly.coordinator.statemachine.TransitionRecord;
import java.util.List;
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
    private final TransitionHistory history = new TransitionHistory(1000);

    /** Applies a command; a rejected command (illegal transition) leaves the state and index untouched. */
    public synchronized ClusterState submit(ClusterCommand command) {
        ClusterState next;
        try {
            next = ClusterReducer.apply(state, command, lastIndex + 1);
        } catch (IllegalTransitionException e) {
            TransitionLogging.rejected(log, state, command, e);
            throw e;
        }
        lastIndex++;
        for (TransitionRecord r : TransitionLogging.diff(state, next, command, lastIndex, System.currentTimeMillis())) {
            TransitionLogging.applied(log, r);
            history.add(r);
        }
        state = next;
        return next;
    }

    /** The newest {@code limit} applied transitions, newest first (§7.2). */
    public List<TransitionRecord> transitions(int limit) {
        return history.latest(limit);
    }

    public synchronized ClusterState state() {
        return state;
    }
}
