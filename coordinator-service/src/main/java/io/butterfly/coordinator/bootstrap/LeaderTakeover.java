package io.butterfly.coordinator.bootstrap;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.Leadership;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A replica that becomes leader after partitions were assigned (failover, or a restart that recovered the
 * log) re-sends every pipeline worker its current assignment: same epoch, so the worker keeps its loaded
 * partition, but the new Raft term, so the worker fences the deposed leader and reports and heartbeats to
 * this replica from now on (its failure detector then has observations to judge).
 */
public class LeaderTakeover implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LeaderTakeover.class);
    private static final int MAX_ATTEMPTS = 5;

    private final ControlLog control;
    private final Workers workers;
    private final ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "leader-takeover");
        t.setDaemon(true);
        return t;
    });

    public LeaderTakeover(ControlLog control, Workers workers) {
        this.control = control;
        this.workers = workers;
    }

    /**
     * The no-op is committed as soon as this replica leads, even while the application is still starting:
     * besides settling the log (below), that first commit is the one that pays for a cold Raft client path
     * (a second or two on a fresh JVM), which the bootstrap's first command then no longer does.
     */
    public void commitNoOpOnLeadership() {
        control.leadership().addListener(l -> {
            if (l.leading()) {
                executor.execute(() -> commitNoOp(l));
            }
        });
    }

    /** Re-announcing needs the running application (workers report back to its gRPC server). */
    public void start() {
        control.leadership().addListener(l -> {
            if (l.leading()) {
                executor.execute(() -> announce(l)); // after the no-op queued on the same executor
            }
        });
    }

    /** docs/bootstrap-protocol.md §5.3 NoOp: an entry of the new term, so everything earlier is known committed before the leader acts. */
    private void commitNoOp(Leadership l) {
        try {
            control.submit(new ClusterCommand.NoOp(l.selfId(), l.term(), System.currentTimeMillis()));
        } catch (RuntimeException e) {
            log.info("raft: no-op of term {} not committed: {}", l.term(), e.toString());
        }
    }

    /** Sends every pipeline worker its current assignment again, with this leader's term (idempotent on workers). */
    void reannounce() {
        Leadership l = control.leadership().current();
        if (l.leading()) {
            executor.execute(() -> announce(l));
        }
    }

    private void announce(Leadership leadership) {
        ClusterState s = control.state();
        if (s.epoch() == 0) {
            return; // nothing assigned yet: the bootstrap assigns, with this term
        }
        log.info("raft: leader in term {} takes over epoch {}: re-announcing the assignments to {}", leadership.term(),
                s.epoch(), s.pipeline());
        for (String nodeId : s.pipeline()) {
            NodeRecord n = s.nodes().get(nodeId);
            if (n != null && n.layerStart() != null) {
                send(leadership, s, nodeId, n);
            }
        }
    }

    private void send(Leadership leadership, ClusterState s, String nodeId, NodeRecord n) {
        Assignment assignment = Assignment.current(s, n, leadership.term());
        for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
            if (!control.leadership().leading() || control.leadership().current().term() != leadership.term()) {
                return; // deposed meanwhile: the next leader announces itself
            }
            try {
                workers.assign(n.info(), assignment, Duration.ofSeconds(5));
                return;
            } catch (WorkerCallFailedException e) {
                // A worker that is down is the failure detector's business; it is reloaded when it recovers.
                log.info("re-announcing to {} failed (attempt {}): {}", nodeId, attempt, e.getMessage());
            }
            try {
                Thread.sleep(250L * attempt);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
