package io.butterfly.coordinator.control;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.TransitionRecord;
import java.util.List;

/** A control log that answers as another does: tests override what they need to see differently. */
public class DelegatingControlLog implements ControlLog {

    private final ControlLog delegate;

    public DelegatingControlLog(ControlLog delegate) {
        this.delegate = delegate;
    }

    @Override
    public ClusterState submit(ClusterCommand command) {
        return delegate.submit(command);
    }

    @Override
    public ClusterState state() {
        return delegate.state();
    }

    @Override
    public void onApplied(AppliedListener listener) {
        delegate.onApplied(listener);
    }

    @Override
    public List<TransitionRecord> transitions(int limit) {
        return delegate.transitions(limit);
    }

    @Override
    public LeadershipEvents leadership() {
        return delegate.leadership();
    }

    @Override
    public RaftStatus raftStatus() {
        return delegate.raftStatus();
    }

    @Override
    public List<ReplicaView> replicaViews() {
        return delegate.replicaViews();
    }
}
