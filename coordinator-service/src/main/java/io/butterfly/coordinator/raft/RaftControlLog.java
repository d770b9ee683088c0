package io.butterfly.coordinator.raft;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.LeadershipEvents;
import io.butterfly.coordinator.control.RaftStatus;
import io.butterfly.coordinator.control.ReplicaView;
import io.butterfly.coordinator.control.TransitionJournal;
import io.butterfly.coordinator.statemachine.TransitionRecord;
import java.util.List;

/** The control log on Raft: commands are committed through this coordinator's replica of the Ratis group. */
public final class RaftControlLog implements ControlLog {

    private final ControlReplica replica;
    private final TransitionJournal journal = new TransitionJournal();

    public RaftControlLog(ControlReplica replica) {
        this.replica = replica;
        replica.addAppliedListener(journal);
    }

    @Override
    public ClusterState submit(ClusterCommand command) {
        try {
            return replica.submit(command);
        } catch (IllegalTransitionException e) {
            journal.rejected(replica.state(), command, e);
            throw e;
        }
    }

    @Override
    public ClusterState state() {
        return replica.state();
    }

    /** On the state machine's thread. */
    @Override
    public void onApplied(AppliedListener listener) {
        replica.addAppliedListener(listener);
    }

    @Override
    public List<TransitionRecord> transitions(int limit) {
        return journal.latest(limit);
    }

    @Override
    public LeadershipEvents leadership() {
        return replica.leadership();
    }

    @Override
    public RaftStatus raftStatus() {
        return replica.status();
    }

    /** Asked of each replica (see {@link ControlReplica#groupViews}). */
    @Override
    public List<ReplicaView> replicaViews() {
        return replica.groupViews();
    }
}
