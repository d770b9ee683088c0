package io.butterfly.coordinator.control;

import io.butterfly.common.concurrent.DaemonThreads;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leadership changes of one replica, fed by the Raft state machine's notifications (raft/ControlStateMachine).
 * {@link #current()} is updated at once; listeners run in order on their own thread, because Raft notifies while
 * it applies the log and a listener that submits a command from that thread would wait for itself.
 */
public final class LeadershipEvents implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LeadershipEvents.class);

    private final List<Consumer<Leadership>> listeners = new CopyOnWriteArrayList<>();
    private final ExecutorService dispatcher;
    private volatile Leadership current;

    public LeadershipEvents(String selfId) {
        this.current = Leadership.none(selfId);
        this.dispatcher = Executors.newSingleThreadExecutor(DaemonThreads.named("raft-leadership-" + selfId));
    }

    public Leadership current() {
        return current;
    }

    /** Whether this replica is the ready leader (leader-only work may run). */
    public boolean leading() {
        return current.leading();
    }

    /** Registers a listener; it hears the current view first, then every change. */
    public void addListener(Consumer<Leadership> listener) {
        listeners.add(listener);
        Leadership now = current;
        dispatcher.execute(() -> deliver(listener, now));
    }

    /** The replica now follows {@code leaderId} (itself included; null during an election) in {@code term}. */
    public void leaderChanged(String leaderId, long term) {
        // A new leader (even this replica) is not ready until its first entry of the term commits.
        publish(new Leadership(current.selfId(), leaderId, term, false));
    }

    /** This replica leads {@code term} and committed its first entry of it: leader-only work may start. */
    public void leaderReady(long term) {
        publish(new Leadership(current.selfId(), current.selfId(), term, true));
    }

    /** This replica stepped down (or was deposed) in {@code term}. */
    public void notLeader(long term) {
        Leadership now = current;
        publish(new Leadership(now.selfId(), now.selfId().equals(now.leaderId()) ? null : now.leaderId(), term, false));
    }

    private synchronized void publish(Leadership next) {
        if (next.equals(current)) {
            return;
        }
        current = next;
        log.info("raft: {} leader={} term={}{}", next.selfId(), next.leaderId(), next.term(),
                next.leading() ? " (this replica leads)" : "");
        for (Consumer<Leadership> l : listeners) {
            dispatcher.execute(() -> deliver(l, next));
        }
    }

    private static void deliver(Consumer<Leadership> listener, Leadership view) {
        try {
            listener.accept(view);
        } catch (RuntimeException e) {
            log.warn("leadership listener failed on {}", view, e);
        }
    }

    @Override
    public void close() {
        dispatcher.shutdownNow();
    }
}
