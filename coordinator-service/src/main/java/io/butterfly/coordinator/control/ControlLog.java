package io.butterfly.coordinator.control;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NotReadyException;
import io.butterfly.coordinator.statemachine.TransitionRecord;
import java.util.List;

/**
 * The single place cluster decisions are applied: each command is committed to the replicated control log and
 * applied by the pure {@link ClusterReducer} on every replica, so every replica holds the same state. The
 * coordinators run it on Raft (raft/RaftControlLog; on the embedded default the group has one replica). Reads
 * are local to this replica.
 */
public interface ControlLog {

    /** Hears every command applied on this replica, on the thread that applies it: it must return quickly. */
    interface AppliedListener {
        void applied(ClusterState before, ClusterState after, ClusterCommand command, long index);
    }

    /**
     * Commits a command and returns this replica's state once it is applied. A command the reducer refuses
     * ({@link NotReadyException}, {@link IllegalTransitionException}, {@link IllegalArgumentException}) leaves the
     * state untouched on every replica and is thrown here; a commit that cannot happen (no leader, no quorum, too
     * slow) throws {@link ControlLogUnavailableException}.
     */
    ClusterState submit(ClusterCommand command);

    /** This replica's state (it may lag the leader by the entries not yet applied here). */
    ClusterState state();

    /** Calls {@code listener} on this replica after each committed command is applied. */
    void onApplied(AppliedListener listener);

    /** The newest {@code limit} applied transitions, newest first (docs/state-machines.md §7.2). */
    List<TransitionRecord> transitions(int limit);

    /** Leadership of this replica; leader-only work (bootstrap, failure detection) follows it. */
    LeadershipEvents leadership();

    /** The replication group as this replica sees it. */
    RaftStatus raftStatus();

    /** Every replica's own view of its role, each asked of that replica. */
    List<ReplicaView> replicaViews();
}
