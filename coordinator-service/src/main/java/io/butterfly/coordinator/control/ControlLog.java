package io.butterfly.coordinator.control;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.IllegalTransitionException;
import io.butterfly.coordinator.raft.ControlReplica;
import io.butterfly.coordinator.raft.ControlStateMachine;
import io.butterfly.coordinator.raft.LeadershipEvents;
import io.butterfly.coordinator.raft.RaftStatus;
import io.butterfly.coordinator.raft.ReplicaView;
import io.butterfly.coordinator.statemachine.TransitionHistory;
import io.butterfly.coordinator.statemachine.TransitionRecord;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * The single place cluster decisions are applied: each command is committed to the Raft-replicated control
 * log (Apache Ratis, see raft/) and applied by the pure reducer on every replica. On the embedded default
 * the group has one replica. Reads are local to this replica.
 */
@Component
public class ControlLog {

    private static final Logger log = LoggerFactory.getLogger(ControlLog.class);

    private final ControlReplica replica;
    private final TransitionHistory history = new TransitionHistory(1000);

    public ControlLog(ControlReplica replica) {
        this.replica = replica;
        // Every replica applies every command, so each one logs and records the transitions it applied.
        replica.addAppliedListener((before, after, command, index) -> {
            for (TransitionRecord r : TransitionLogging.diff(before, after, command, index, System.currentTimeMillis())) {
                TransitionLogging.applied(log, r);
                history.add(r);
            }
        });
    }

    /**
     * Commits a command and returns this replica's state once it is applied. A rejected command (illegal
     * transition) leaves the state untouched on every replica and is thrown here.
     */
    public ClusterState submit(ClusterCommand command) {
        try {
            return replica.submit(command);
        } catch (IllegalTransitionException e) {
            TransitionLogging.rejected(log, replica.state(), command, e);
            throw e;
        }
    }

    /**
     * Calls {@code listener} on this replica after each committed command is applied (on the state machine's
     * thread: it must return quickly).
     */
    public void onApplied(ControlStateMachine.AppliedListener listener) {
        replica.addAppliedListener(listener);
    }

    /** The newest {@code limit} applied transitions, newest first (§7.2). */
    public List<TransitionRecord> transitions(int limit) {
        return history.latest(limit);
    }

    public ClusterState state() {
        return replica.state();
    }

    /** Leadership of this replica; leader-only work (bootstrap, failure detection) follows it. */
    public LeadershipEvents leadership() {
        return replica.leadership();
    }

    public RaftStatus raftStatus() {
        return replica.status();
    }

    /** Every replica's own view of its role (asked of each; see ControlReplica#groupViews). */
    public List<ReplicaView> replicaViews() {
        return replica.groupViews();
    }
}
