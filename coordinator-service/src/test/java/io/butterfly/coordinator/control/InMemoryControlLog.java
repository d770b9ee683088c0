package io.butterfly.coordinator.control;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.statemachine.TransitionRecord;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control log without Raft, for unit tests: a submitted command is applied by the reducer at once, on the
 * caller's thread, as one replica that always leads (unless told to follow) would apply it. It keeps the Raft
 * log's contract: a refused command throws and leaves the state untouched (its entry still takes an index, as a
 * committed no-op does), applied listeners hear every applied command, and the transitions are journaled.
 *
 * <p>It lives with the tests, not in production: a coordinator's state must survive its restart, which takes a
 * durable log (the embedded default runs a Raft group of one), and test-support cannot hold it because it
 * implements this module's port.
 */
public final class InMemoryControlLog implements ControlLog, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(InMemoryControlLog.class);

    private final LeadershipEvents leadership;
    private final TransitionJournal journal = new TransitionJournal();
    private final List<AppliedListener> listeners = new CopyOnWriteArrayList<>();
    private volatile ClusterState state = ClusterState.initial();
    private long index;
    private volatile boolean quorum = true;

    /** Replica coordinator-0, the ready leader of term 1. */
    public InMemoryControlLog() {
        this(TestLeadership.leading("coordinator-0", 1));
    }

    /** A replica in the role {@code leadership} says (see {@link TestLeadership}). */
    public InMemoryControlLog(LeadershipEvents leadership) {
        this.leadership = leadership;
        listeners.add(journal);
    }

    /**
     * With {@code false}, commits fail as they do at a replica left without a quorum (its peers killed): {@link
     * ControlLogUnavailableException}, the state as it was; {@code true} again commits.
     */
    public void quorum(boolean held) {
        quorum = held;
    }

    @Override
    public synchronized ClusterState submit(ClusterCommand command) {
        if (!quorum) {
            throw new ControlLogUnavailableException("control log unavailable: no quorum (InMemoryControlLog)", null);
        }
        ClusterState before = state;
        long at = ++index;
        ClusterState after;
        try {
            after = ClusterReducer.apply(before, command, at);
        } catch (IllegalTransitionException e) {
            journal.rejected(before, command, e);
            throw e;
        }
        state = after;
        for (AppliedListener l : listeners) {
            try {
                l.applied(before, after, command, at);
            } catch (RuntimeException e) {
                log.warn("applied-listener failed at index {}", at, e); // as the Raft state machine does
            }
        }
        return after;
    }

    @Override
    public ClusterState state() {
        return state;
    }

    @Override
    public void onApplied(AppliedListener listener) {
        listeners.add(listener);
    }

    @Override
    public List<TransitionRecord> transitions(int limit) {
        return journal.latest(limit);
    }

    @Override
    public LeadershipEvents leadership() {
        return leadership;
    }

    /** A group of this one replica, its log held in memory only (so it has no start index). */
    @Override
    public RaftStatus raftStatus() {
        Leadership l = leadership.current();
        return new RaftStatus(l.selfId(), role(l), l.leaderId(), l.term(), state.lastAppliedIndex(), -1,
                List.of(l.selfId()));
    }

    @Override
    public List<ReplicaView> replicaViews() {
        Leadership l = leadership.current();
        return List.of(new ReplicaView(l.selfId(), role(l), l.leading() ? l.term() : 0));
    }

    private static String role(Leadership l) {
        return l.leading() ? "LEADER" : "FOLLOWER";
    }

    @Override
    public void close() {
        leadership.close();
    }
}
