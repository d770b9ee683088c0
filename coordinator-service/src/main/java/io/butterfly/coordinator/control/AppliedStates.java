package io.butterfly.coordinator.control;

import io.butterfly.coordinator.cluster.ClusterState;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/**
 * Futures of this replica's state, completed by the thread that applies the control log: each with the first applied
 * state a condition holds of (at once when the current state does). A caller that waits for a record another replica
 * commits, or for an index this replica lags behind, waits on one of these instead of reading the state in a loop.
 */
public final class AppliedStates {

    private final ControlLog control;
    private final Map<CompletableFuture<ClusterState>, Predicate<ClusterState>> waiting = new ConcurrentHashMap<>();

    private AppliedStates(ControlLog control) {
        this.control = control;
    }

    /** Follows {@code control}'s applied states. */
    public static AppliedStates of(ControlLog control) {
        AppliedStates states = new AppliedStates(control);
        control.onApplied((before, after, command, index) -> states.applied(after));
        return states;
    }

    /**
     * Completes with the first state {@code condition} holds of, this one or one applied later. A future completed
     * otherwise (a timeout) is forgotten.
     */
    public CompletableFuture<ClusterState> when(Predicate<ClusterState> condition) {
        CompletableFuture<ClusterState> f = new CompletableFuture<>();
        waiting.put(f, condition);
        f.whenComplete((state, failure) -> waiting.remove(f));
        ClusterState now = control.state(); // read after registering: a state applied meanwhile is seen either way
        if (condition.test(now)) {
            waiting.remove(f);
            f.complete(now);
        }
        return f;
    }

    /** Completes once this replica applied the log up to {@code index}. */
    public CompletableFuture<ClusterState> reaching(long index) {
        return when(s -> s.lastAppliedIndex() >= index);
    }

    /**
     * The first state {@code condition} holds of, waiting at most {@code timeout}; the state as it is then when it
     * did not come (or the wait was interrupted).
     */
    public ClusterState await(Predicate<ClusterState> condition, Duration timeout) {
        CompletableFuture<ClusterState> f = when(condition);
        try {
            return f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            return control.state();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return control.state();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        } finally {
            waiting.remove(f);
        }
    }

    private void applied(ClusterState after) {
        for (Iterator<Map.Entry<CompletableFuture<ClusterState>, Predicate<ClusterState>>> it =
                     waiting.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<CompletableFuture<ClusterState>, Predicate<ClusterState>> w = it.next();
            try {
                if (w.getValue().test(after)) {
                    it.remove();
                    w.getKey().complete(after);
                }
            } catch (RuntimeException e) {
                it.remove();
                w.getKey().completeExceptionally(e);
            }
        }
    }
}
