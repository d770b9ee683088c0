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
import io.butterfly.coordinator.planning.StageAssignment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engines follow the replicated state: each pipeline's engine holds while its pipeline does not serve, and once it
 * serves again it is told the stages the state assigns (their route, the epoch, each stage's KV budget for this
 * replica), so its paused sequences resume there; a task another replica adopted leaves this one's engine. With
 * several pipelines (docs/scale-out.md) one that lost a stage holds while the others serve on. Changes are carried out
 * in order, off the thread that applies the log.
 */
final class EngineServing implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EngineServing.class);

    private final ControlLog control;
    private final ModelCatalog catalog;
    private final Pipeline pipeline;
    private final TaskJournal journal;
    private final EnginePipelines engines;
    private final int replicas;
    private final ExecutorService watcher = Executors.newSingleThreadExecutor(DaemonThreads.named("engine-serving"));
    /** Per pipeline, what its engine's serving was built from: rebuilt when it changes; null while it holds. */
    private final List<ServingKey> serving = new ArrayList<>();
    /** Where an engine was last told to send: what a request's KV cache is judged against at admission. */
    private volatile EngineCore.Serving lastServing;

    /** @param epoch the epoch the pipeline's steps carry ({@link ClusterState#stepsEpoch}): the current one, or with
     *              several pipelines the one it has been the same since, so a re-plan of another leaves it alone */
    private record ServingKey(long epoch, List<String> pipeline, String merkleRoot) {

        /** Per pipeline of {@code s}, what its engine serves from; null for one that does not serve now. */
        static List<ServingKey> of(ClusterState s) {
            List<List<StageAssignment>> pipelines = s.pipelines();
            List<Boolean> serves = s.servingPipelines();
            List<ServingKey> out = new ArrayList<>();
            for (int i = 0; i < pipelines.size(); i++) {
                out.add(serves.get(i) ? new ServingKey(s.stepsEpoch(pipelines.get(i)), pipelines.get(i).stream()
                        .map(StageAssignment::nodeId).toList(), s.merkleRoot()) : null);
            }
            return out;
        }
    }

    /**
     * Whether a worker's stage keeps a prefix cache, as it last reported (asked at each scheduling); none until told.
     */
    private volatile java.util.function.Predicate<String> prefixCachingOn = nodeId -> false;

    /** Where the engines learn which workers keep prefix caches (their heartbeats' reports). */
    void prefixCaching(java.util.function.Predicate<String> onWorker) {
        prefixCachingOn = onWorker;
    }

    /** @param replicas coordinator replicas serving the same stages: each schedules against its share of their KV budgets */
    EngineServing(ControlLog control, ModelCatalog catalog, Pipeline pipeline, TaskJournal journal,
                  EnginePipelines engines, int replicas) {
        this.control = control;
        this.catalog = catalog;
        this.pipeline = pipeline;
        this.journal = journal;
        this.engines = engines;
        this.replicas = replicas;
        control.onApplied(this::applied);
    }

    private void applied(ClusterState before, ClusterState after, ClusterCommand command, long index) {
        if (watcher.isShutdown()) {
            return;
        }
        if (before.system().acceptsWork() != after.system().acceptsWork() || before.epoch() != after.epoch()
                || !ServingKey.of(before).equals(ServingKey.of(after))) {
            watcher.execute(this::serveCurrent);
        }
        if (command instanceof ClusterCommand.TasksRecorded recorded) {
            for (TaskEvent e : recorded.events()) {
                TaskRecord then = before.tasks().get(e.taskId());
                TaskRecord now = after.tasks().get(e.taskId());
                if (e instanceof TaskEvent.Adopted && then != null && now != null && mine(then) && !mine(now)) {
                    engines.relinquish(e.taskId(), now.owner());
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
        if (!s.acceptsNewWork()) {
            synchronized (this) {
                serving.clear();
                engines.holdAll();
            }
            return;
        }
        try {
            serve(s, servedModel(s));
        } catch (RuntimeException e) {
            log.warn("the engine could not follow the cluster's pipelines (epoch {}): {}", s.epoch(), e.toString());
        }
    }

    /** The model {@code state} serves, or {@link NotServingException} while it serves none. */
    ServedModel servedModel(ClusterState state) {
        if (state.merkleRoot() == null) {
            throw new NotServingException("the cluster is " + state.system() + ", not READY: " + state.statusMessage());
        }
        return catalog.servedFor(state.merkleRoot());
    }

    /**
     * Points each pipeline's engine at the stages {@code state} assigns it, when they changed (or it held meanwhile);
     * the engine of a pipeline that does not serve now holds.
     */
    synchronized void serve(ClusterState state, ServedModel model) {
        List<ServingKey> keys = ServingKey.of(state);
        if (keys.isEmpty()) {
            throw new NotServingException("no pipeline is assigned");
        }
        List<List<StageAssignment>> pipelines = state.pipelines();
        for (int i = 0; i < Math.max(keys.size(), engines.pipelines()); i++) {
            ServingKey key = i < keys.size() ? keys.get(i) : null;
            ServingKey was = i < serving.size() ? serving.get(i) : null;
            if (key == null) {
                if (was != null || i >= serving.size()) {
                    engines.hold(i);
                }
            } else if (!key.equals(was)) {
                engines.serve(i, serving(state, pipelines.get(i), model));
            }
            while (serving.size() <= i) {
                serving.add(null);
            }
            serving.set(i, key);
        }
    }

    /** Where pipeline {@code stages}' engine sends: their route, the epoch its steps carry, each stage's KV budget here. */
    private EngineCore.Serving serving(ClusterState state, List<StageAssignment> stages, ServedModel model) {
        List<NodeInfo> nodes = new ArrayList<>();
        List<KvBudgets.Stage> budgets = new ArrayList<>();
        for (StageAssignment stage : stages) {
            NodeRecord n = state.nodes().get(stage.nodeId());
            if (n == null) {
                throw new NotServingException("the pipeline names " + stage.nodeId() + ", which is not a member");
            }
            nodes.add(n.info());
            budgets.add(budget(n, model.config()));
        }
        List<String> ids = nodes.stream().map(NodeInfo::nodeId).toList();
        EngineCore.Serving next = new EngineCore.Serving(pipeline.route(nodes), state.stepsEpoch(stages), budgets,
                () -> ids.stream().allMatch(prefixCachingOn));
        lastServing = next;
        return next;
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
