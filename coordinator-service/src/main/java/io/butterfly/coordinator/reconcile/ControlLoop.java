package io.butterfly.coordinator.reconcile;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.control.Leadership;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ModelImportFailedException;
import io.butterfly.coordinator.model.RegistryUnavailableException;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.planning.ModelFootprints;
import io.butterfly.coordinator.statemachine.SystemState;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leader's one control loop: while this replica leads, it asks {@link Reconciler} what is due and carries it out,
 * commits on its own thread one at a time (each changes what is due next), calls to workers and the registry on a pool,
 * one attempt per action at a time; what became of each attempt is fed back, which is what retries and backoff are
 * judged on. It runs whenever a command is applied, an action ends or leadership changes, and every 100 ms for what
 * is due by time. Another leader starts from the replicated state with a clean slate.
 */
public class ControlLoop implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ControlLoop.class);
    /** How often the loop looks again without being woken (for what is due by time). */
    private static final long TICK_MS = 100;
    /** How often discovery is asked for members while the first plan waits for workers, and otherwise. */
    private static final long POLL_BOOTSTRAP_MS = 50;
    private static final long POLL_MS = 1_000;
    /** Commits in one run of the loop at most (each changes the state; a few usually suffice). */
    private static final int MAX_COMMITS_PER_RUN = 100;

    private final Reconciler reconciler;
    private final ControlLog control;
    private final ModelCatalog catalog;
    private final ModelFootprints.Settings footprint;
    private final Workers workers;
    private final WorkerDirectory directory;
    private final Clock clock;
    private final ValidationRound validation;
    private final ExecutorService calls = Executors.newCachedThreadPool(DaemonThreads.named("control-call"));
    /** The no-op of each new term: its own thread, ahead of everything else the leader does. */
    private final ExecutorService noOps = Executors.newSingleThreadExecutor(DaemonThreads.named("control-noop"));
    private final Thread thread = DaemonThreads.named("control-loop").newThread(this::run);
    private final Map<String, Attempts> attempts = new ConcurrentHashMap<>();
    private final Set<String> running = ConcurrentHashMap.newKeySet();
    private final Object signal = new Object();
    private boolean woken; // guarded by signal
    private volatile boolean closed;
    private volatile List<NodeInfo> members;
    /** Nodes that left the state so far: a discovery listing asked for before the latest departure is stale. */
    private final AtomicLong departures = new AtomicLong();
    private volatile long membersPolledAtMs;
    private volatile Observations.ModelView modelView;
    /** The weight width {@link #modelView} was sized at ({@link ClusterState#widestWeightBytes}). */
    private volatile int modelViewWeightBytes;
    private long leadingTerm = -1; // loop thread only

    public ControlLoop(Reconciler reconciler, ControlLog control, ModelCatalog catalog,
                       ModelFootprints.Settings footprint, Workers workers, WorkerDirectory directory, Clock clock) {
        this.reconciler = reconciler;
        this.control = control;
        this.catalog = catalog;
        this.footprint = footprint;
        this.workers = workers;
        this.directory = directory;
        this.clock = clock;
        this.validation = new ValidationRound(control, workers, clock, calls);
    }

    /**
     * docs/bootstrap-protocol.md §5.3 NoOp: an entry of the new term as soon as this replica leads, even while the
     * application is still starting. Besides settling the log, that first commit is the one that pays for a cold Raft
     * client path (a second or two on a fresh JVM), which the bootstrap's first command then no longer does.
     */
    public void commitNoOpOnLeadership() {
        control.leadership().addListener(l -> {
            if (l.leading()) {
                noOps.execute(() -> {
                    try {
                        control.submit(new ClusterCommand.NoOp(l.selfId(), l.term(), clock.millis()));
                    } catch (RuntimeException e) {
                        log.info("raft: no-op of term {} not committed: {}", l.term(), e.toString());
                    }
                });
            }
        });
    }

    /** Starts reconciling, once the application serves: workers report back to its gRPC server. */
    public void start() {
        control.onApplied((before, after, command, index) -> wake());
        control.leadership().addListener(l -> wake());
        thread.start();
    }

    private void wake() {
        synchronized (signal) {
            woken = true;
            signal.notifyAll();
        }
    }

    private void run() {
        while (!closed) {
            try {
                synchronized (signal) {
                    if (!woken) {
                        signal.wait(TICK_MS);
                    }
                    woken = false;
                }
                runOnce();
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                log.warn("control loop: {}", e.toString(), e);
            }
        }
    }

    /** One run: the due commits one after another, then the other due actions started. */
    void runOnce() {
        Leadership l = control.leadership().current();
        if (!l.leading()) {
            if (leadingTerm >= 0) {
                log.info("control loop: no longer leading (term {}); stopped", leadingTerm);
                leadingTerm = -1;
            }
            return;
        }
        if (l.term() != leadingTerm) {
            // What the previous leadership tried says nothing about this one: another leader may have acted between.
            attempts.clear();
            members = null;
            leadingTerm = l.term();
            log.info("control loop: leading term {} from epoch {} ({})", l.term(), control.state().epoch(),
                    control.state().system());
        }
        pollMembers();
        for (int i = 0; i < MAX_COMMITS_PER_RUN && !closed; i++) {
            // What runs is read before what became of earlier attempts: an attempt that ends in between is then
            // still taken as running, never as not yet tried (which would start it again).
            Set<String> busy = Set.copyOf(running);
            ClusterState s = control.state();
            List<Action> due = reconciler.next(s, observe(s, l.term()));
            Action.Commit commit = (Action.Commit) due.stream().filter(a -> a instanceof Action.Commit).findFirst()
                    .orElse(null);
            if (commit == null) {
                due.stream().filter(a -> !busy.contains(a.key())).forEach(this::launch);
                return;
            }
            commit(commit);
            if (!control.leadership().leading()) {
                return;
            }
        }
    }

    private Observations observe(ClusterState s, long term) {
        return new Observations(clock.millis(), term, model(s), members, attempts);
    }

    /** The served model as this replica holds it, if it is the one the log pins (or none is pinned yet). */
    private Observations.ModelView model(ClusterState s) {
        ServedModel served = catalog.served();
        if (served == null || (s.merkleRoot() != null && !served.manifest().merkleRoot().equals(s.merkleRoot()))) {
            return null;
        }
        Observations.ModelView view = modelView;
        int weightBytes = s.widestWeightBytes();
        if (view == null || !view.merkleRoot().equals(served.manifest().merkleRoot())
                || modelViewWeightBytes != weightBytes) {
            view = new Observations.ModelView(served.manifest().modelId(), served.manifest().merkleRoot(),
                    ModelFootprints.of(served.manifest(), served.config(), footprint, weightBytes),
                    io.butterfly.coordinator.planning.ExpertFootprint.of(served.config(), weightBytes),
                    io.butterfly.coordinator.planning.HeadSpread.slices(served.config()));
            modelViewWeightBytes = weightBytes;
            modelView = view;
        }
        return view;
    }

    /**
     * Asks discovery for its members in the background: often while the first plan waits for workers. A listing asked
     * for before a node left the state is dropped: it may still hold the node, which would then join again.
     */
    private void pollMembers() {
        ClusterState s = control.state();
        long interval = s.system() == SystemState.BOOTSTRAPPING && s.epoch() == 0 ? POLL_BOOTSTRAP_MS : POLL_MS;
        if (clock.millis() - membersPolledAtMs < interval || !running.add("members")) {
            return;
        }
        long departed = departures.get();
        calls.execute(() -> {
            try {
                List<NodeInfo> listed = directory.joinedWorkers().orElse(null);
                if (departures.get() != departed) {
                    return;
                }
                if (!Objects.equals(listed, members)) {
                    wake();
                }
                members = listed;
            } catch (RuntimeException e) {
                members = null;
            } finally {
                membersPolledAtMs = clock.millis();
                running.remove("members");
            }
        });
    }

    private void commit(Action.Commit commit) {
        try {
            for (ClusterCommand c : commit.commands()) {
                control.submit(c);
                if (c instanceof ClusterCommand.NodeLeft) {
                    departures.incrementAndGet();
                    members = null; // unknown until discovery is asked again
                }
            }
            done(commit.key(), true);
            if (commit.key().equals("config")) {
                log.debug("committed {}", commit.commands());
            } else {
                log.info("committed {}: {}", commit.key(), commit.commands());
            }
        } catch (IllegalTransitionException | IllegalArgumentException e) {
            done(commit.key(), false);
            log.info("{} refused: {}", commit.key(), e.getMessage());
        } catch (ControlLogUnavailableException e) {
            // It may still commit: the state will say so, and nothing is due again until it has been retried.
            done(commit.key(), false);
            log.warn("{} not committed, the control log is unavailable ({}); retrying", commit.key(), e.getMessage());
        }
    }

    /** Starts an action on the pool unless an attempt of it is running. */
    private void launch(Action a) {
        if (!running.add(a.key())) {
            return;
        }
        calls.execute(() -> {
            boolean ok = false;
            try {
                ok = perform(a);
            } catch (RuntimeException e) {
                log.warn("{} failed: {}", a.key(), e.toString());
            } finally {
                done(a.key(), ok);
                running.remove(a.key());
                wake();
            }
        });
    }

    private boolean perform(Action a) {
        if (a instanceof Action.Assign assign) {
            return assign(assign);
        } else if (a instanceof Action.Validate) {
            ClusterState s = control.state();
            ServedModel model = catalog.served();
            return model != null && validation.run(s, model, catalog.directory(model.manifest().modelId()));
        } else if (a instanceof Action.FetchModel) {
            return fetchModel();
        } else if (a instanceof Action.Dismiss d) {
            workers.dismiss(d.node(), d.epoch(), d.term(), Duration.ofSeconds(5));
            log.info("told {} to leave: it is drained", d.node().nodeId());
            return true;
        }
        throw new IllegalArgumentException("not an action to launch: " + a);
    }

    private boolean assign(Action.Assign a) {
        Assignment as = a.assignment();
        if (!a.why().equals("announce")) {
            workers.reconnect(a.node()); // the connection backed off while the worker was away
        }
        try {
            workers.assign(a.node(), as, Duration.ofSeconds(10));
            log.info("assigned layers [{}, {}) of {} to {} (epoch {}, term {}, unchanged since epoch {}): {}",
                    as.layerStart(), as.layerEnd(), as.modelId(), a.node().nodeId(), as.epoch(), as.term(),
                    as.keptSinceEpoch(), a.why());
            return true;
        } catch (WorkerCallFailedException e) {
            log.info("assignment of epoch {} not accepted by {} ({}): {}", as.epoch(), a.node().nodeId(), a.why(),
                    e.getMessage());
            return false;
        }
    }

    private boolean fetchModel() {
        String root = control.state().merkleRoot();
        try {
            ServedModel model = root != null ? catalog.servedFor(root) : catalog.load();
            log.info("serving model {} ({} layers, merkle root {})", model.manifest().modelId(),
                    model.manifest().numLayers(), model.manifest().merkleRoot());
            return true;
        } catch (ButterflyException e) {
            // An untrusted or forged manifest is never used; keep asking in case the registry is re-keyed.
            log.error("refusing the manifest of the served model: {}: {}", e.code(), e.getMessage());
        } catch (ModelImportFailedException e) {
            // Shown in system/state (model_error); asked again in case the model is imported anew.
            log.error("the registry cannot serve the model: {}", e.getMessage());
        } catch (RegistryUnavailableException e) {
            log.info("waiting for the registry to serve the model: {}", e.getMessage());
        } catch (Exception e) {
            log.warn("fetching the served model failed: {}", e.toString());
        }
        return false;
    }

    private void done(String key, boolean ok) {
        long now = clock.millis();
        attempts.compute(key, (k, a) -> ok ? (a == null ? Attempts.NONE : a).succeeded(now)
                : (a == null ? Attempts.NONE : a).failed(now));
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        calls.shutdownNow();
        noOps.shutdownNow();
    }
}
