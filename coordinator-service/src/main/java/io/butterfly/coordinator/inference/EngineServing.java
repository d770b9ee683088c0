package io.butterfly.coordinator.inference;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.model.KvCacheSizing;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.engine.EngineCore;
import io.butterfly.coordinator.inference.engine.KvBudgets;
import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ServedModel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine follows the replicated state: it holds while the cluster does not serve, and once it serves again it
 * is told the stages the state assigns (their route, the epoch, each stage's KV budget for this replica), so its
 * paused sequences resume there; a task another replica adopted leaves this one's engine. Changes are carried out in
 * order, off the thread that applies the log.
 */
final class EngineServing implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EngineServing.class);

    private final ControlLog control;
    private final ModelCatalog catalog;
    private final Pipeline pipeline;
    private final TaskJournal journal;
    private final EngineCore engine;
    private final int replicas;
    private final ExecutorService watcher = Executors.newSingleThreadExecutor(DaemonThreads.named("engine-serving"));
    /** What the engine's serving was built from: rebuilt when it changes; null while the engine holds. */
    private volatile ServingKey serving;
    /** Where the engine was last told to send: what a request's KV cache is judged against at admission. */
    private volatile EngineCore.Serving lastServing;

    private record ServingKey(long epoch, List<String> pipeline, String merkleRoot) {

        static ServingKey of(ClusterState s) {
            return new ServingKey(s.epoch(), s.pipeline(), s.merkleRoot());
        }
    }

    /** @param replicas coordinator replicas serving the same stages: each schedules against its share of their KV budgets */
    EngineServing(ControlLog control, ModelCatalog catalog, Pipeline pipeline, TaskJournal journal, EngineCore engine,
                  int replicas) {
        this.control = control;
        this.catalog = catalog;
        this.pipeline = pipeline;
        this.journal = journal;
        this.engine = engine;
        this.replicas = replicas;
        control.onApplied(this::applied);
    }

    private void applied(ClusterState before, ClusterState after, ClusterCommand command, long index) {
        if (watcher.isShutdown()) {
            return;
        }
        boolean was = before.system().acceptsWork();
        boolean is = after.system().acceptsWork();
        if (is && (!was || !ServingKey.of(before).equals(ServingKey.of(after)))) {
            watcher.execute(this::serveCurrent);
        } else if (was && !is) {
            watcher.execute(() -> {
                serving = null;
                engine.hold();
            });
        }
        if (command instanceof ClusterCommand.TasksRecorded recorded) {
            for (TaskEvent e : recorded.events()) {
                TaskRecord then = before.tasks().get(e.taskId());
                TaskRecord now = after.tasks().get(e.taskId());
                if (e instanceof TaskEvent.Adopted && then != null && now != null && mine(then) && !mine(now)) {
                    engine.relinquish(e.taskId(), now.owner());
                }
            }
        }
    }

    /** Whether this replica (this process) owns {@code t}. */
    boolean mine(TaskRecord t) {
        return t.isOwner(journal.replicaId(), journal.startedAtMs());
    }

    private void serveCurrent() {
        ClusterState s = control.state();
        if (!s.system().acceptsWork()) {
            return;
        }
        try {
            serve(s, servedModel(s));
        } catch (RuntimeException e) {
            log.warn("the engine could not follow the cluster's pipeline (epoch {}): {}", s.epoch(), e.toString());
        }
    }

    /** The model {@code state} serves, or {@link NotServingException} while it serves none. */
    ServedModel servedModel(ClusterState state) {
        if (state.merkleRoot() == null) {
            throw new NotServingException("the cluster is " + state.system() + ", not READY: " + state.statusMessage());
        }
        return catalog.servedFor(state.merkleRoot());
    }

    /** Points the engine at the stages {@code state} assigns, when they changed (or it held meanwhile). */
    synchronized void serve(ClusterState state, ServedModel model) {
        ServingKey key = ServingKey.of(state);
        if (key.equals(serving)) {
            return;
        }
        List<NodeInfo> nodes = new ArrayList<>();
        List<KvBudgets.Stage> budgets = new ArrayList<>();
        for (String id : state.pipeline()) {
            NodeRecord n = state.nodes().get(id);
            if (n == null) {
                throw new NotServingException("the pipeline names " + id + ", which is not a member");
            }
            nodes.add(n.info());
            budgets.add(budget(n, model.config()));
        }
        if (nodes.isEmpty()) {
            throw new NotServingException("no pipeline is assigned");
        }
        EngineCore.Serving next = new EngineCore.Serving(pipeline.route(nodes), state.epoch(), budgets);
        engine.serve(next);
        lastServing = next;
        serving = key;
    }

    /** A stage's KV budget for this replica, and what a sequence takes there (as the stage's caches grow). */
    private KvBudgets.Stage budget(NodeRecord n, ModelConfig config) {
        int layers = n.layerStart() == null ? 0 : n.layerEnd() - n.layerStart();
        long share = n.kvCacheBudgetBytes() / Math.max(1, replicas); // 0: no budget reported, no cap
        return new KvBudgets.Stage(n.info().nodeId(), share,
                positions -> KvCacheSizing.reservedBytes(config, layers, n.hasHead(), positions));
    }

    /** The stage a sequence reaching {@code positions} could never fit on, even alone; null when it fits. */
    KvBudgets.Stage neverFits(int positions) {
        EngineCore.Serving last = lastServing;
        return last == null ? null : last.neverFits(positions);
    }

    @Override
    public void close() {
        watcher.shutdownNow();
    }
}
