package io.butterfly.coordinator.inference;

import io.butterfly.common.model.KvCacheSizing;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.sampling.Sampler;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.coordinator.inference.scheduler.KvBudgets;
import io.butterfly.coordinator.inference.scheduler.SchedulerSettings;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ServedModel;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Generation on this replica: the request processor in front of the {@link Engine}. A request is validated and
 * tokenized here, on the caller's thread, so that everything a client can be refused for is refused before it is
 * queued (and before a stream starts); then the engine runs it with the others, and the caller awaits or streams its
 * {@link RequestHandle}. No thread is held for a request.
 */
public class InferenceService implements AutoCloseable {

    /**
     * @param maxNewTokens    upper bound for a request's max_tokens
     * @param maxPromptTokens upper bound for a prompt's length in tokens
     * @param maxPromptChars  upper bound for a text prompt's length in characters, checked before it is tokenized
     * @param replicas        coordinator replicas serving the same stages: each schedules against its share of their
     *                        KV budgets
     */
    public record Settings(int maxNewTokens, int maxPromptTokens, int maxPromptChars, int replicas) {
    }

    private final Settings settings;
    private final ControlLog control;
    private final ModelCatalog catalog;
    private final Pipeline pipeline;
    private final Engine engine;
    private volatile ServingKey serving;

    /** What the engine's serving snapshot was built from: rebuilt when it changes. */
    private record ServingKey(long epoch, List<String> pipeline, String merkleRoot) {
    }

    public InferenceService(Settings settings, SchedulerSettings scheduling, ControlLog control, ModelCatalog catalog,
                            Pipeline pipeline, TaskJournal journal, ServingMetrics metrics, RequestTracing tracing,
                            Clock clock) {
        this.settings = settings;
        this.control = control;
        this.catalog = catalog;
        this.pipeline = pipeline;
        this.engine = new Engine(scheduling, pipeline, journal, metrics, tracing, clock::millis);
    }

    /** Whether this replica runs {@code taskId} now (see {@link OrphanedTasks}). */
    boolean running(String taskId) {
        return engine.running(taskId);
    }

    /** The model the cluster serves now, or {@link NotServingException} while it serves none. */
    public ServedModel servedModel() {
        return servedModel(control.state());
    }

    private ServedModel servedModel(ClusterState state) {
        if (state.merkleRoot() == null) {
            throw new NotServingException("the cluster is " + state.system() + ", not READY: " + state.statusMessage());
        }
        return catalog.servedFor(state.merkleRoot());
    }

    /** A request validated and tokenized, ready to queue. */
    public static final class Prepared {
        private final Sequence sequence;

        private Prepared(Sequence sequence) {
            this.sequence = sequence;
        }

        /** The handle it will have once queued. */
        public RequestHandle handle() {
            return sequence;
        }
    }

    /**
     * Validates a request and queues it. Everything a client can be refused for is refused here: bad input, a
     * cluster not serving, a sequence no stage could hold (413), a full queue (429). {@code listener} (null for none)
     * is told each token as it is chosen, on the engine's thread: it must hand the token over, not block.
     */
    public RequestHandle submit(GenerationRequest request, TokenListener listener) {
        return submit(prepare(request, listener));
    }

    /** Validates and tokenizes a request (everything but the queue's room), without queuing it. */
    public Prepared prepare(GenerationRequest request, TokenListener listener) {
        return new Prepared(sequence(request, listener));
    }

    public RequestHandle submit(Prepared prepared) {
        engine.submit(prepared.sequence);
        return prepared.sequence;
    }

    /** Queues prepared requests that run together (an OpenAI list of prompts): all of them, or none. */
    public List<RequestHandle> submitAll(List<Prepared> prepared) {
        List<Sequence> all = prepared.stream().map(p -> p.sequence).toList();
        engine.submitAll(all);
        return List.copyOf(all);
    }

    /** Runs a generation and answers when it is complete (blocks the caller). */
    public GenerationResult generate(GenerationRequest request) {
        return await(submit(request, null).result());
    }

    /** The result of a future this service completes, its failure thrown as it was raised. */
    public static GenerationResult await(CompletableFuture<GenerationResult> result) {
        try {
            return result.join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
    }

    private Sequence sequence(GenerationRequest request, TokenListener listener) {
        long arrived = System.nanoTime();
        RequestValidator.checkInputChoice(request);
        ClusterState state = control.state();
        if (!state.system().acceptsWork()) { // judged from this replica's state: tasks are recorded off the request's path
            throw new NotServingException("the cluster is " + state.system() + ", not READY: " + state.statusMessage());
        }
        ServedModel model = servedModel(state);
        if (request.prompt() != null) {
            RequestValidator.checkPromptChars(request.prompt(), settings.maxPromptChars());
        }
        long[] prompt = request.tokenIds() != null
                ? RequestValidator.checkTokenIds(request.tokenIds(), model.config().vocabSize()).stream()
                .mapToLong(Long::longValue).toArray()
                : tokenize(model, request.prompt());
        RequestValidator.checkPromptLength(request.tokenIds() != null ? "token_ids" : "prompt", prompt.length,
                settings.maxPromptTokens(), model.config().maxPositions());
        int maxTokens = RequestValidator.maxTokens(request, prompt.length, settings.maxNewTokens(),
                model.config().maxPositions());
        SamplingParams sampling = RequestValidator.sampling(request);
        StopSequences stop = RequestValidator.stop(request);
        serve(state, model);
        KvBudgets.Stage full = engine.neverFits(prompt.length + maxTokens);
        if (full != null) {
            throw new InvalidRequestException("max_tokens", "a sequence of " + prompt.length + " prompt and "
                    + maxTokens + " new tokens needs more KV cache on " + full.nodeId() + " than its whole budget for"
                    + " this coordinator: ask for fewer tokens", true);
        }
        // The text is followed token by token only for a listener or stop strings.
        IncrementalText text = listener == null && stop.isEmpty() ? null
                : new IncrementalText(model.tokenizer()::decode, stop);
        return new Sequence(UUID.randomUUID().toString(), model, prompt, maxTokens, new Sampler(sampling),
                Boolean.TRUE.equals(request.ignoreEos()), text, listener, arrived, engine);
    }

    /** Points the engine at the stages {@code state} assigns, when they changed. */
    private void serve(ClusterState state, ServedModel model) {
        ServingKey key = new ServingKey(state.epoch(), state.pipeline(), state.merkleRoot());
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
        engine.serve(new Engine.Serving(pipeline.route(nodes), state.epoch(), budgets));
        serving = key;
    }

    /** A stage's KV budget for this replica, and what a sequence takes there (as the stage's caches grow). */
    private KvBudgets.Stage budget(NodeRecord n, ModelConfig config) {
        int layers = n.layerStart() == null ? 0 : n.layerEnd() - n.layerStart();
        long share = n.kvCacheBudgetBytes() / Math.max(1, settings.replicas()); // 0: no budget reported, no cap
        return new KvBudgets.Stage(n.info().nodeId(), share, positions -> KvCacheSizing.reservedBytes(config, layers, positions));
    }

    /** Requests running now (holding KV caches on the stages). */
    public int running() {
        return engine.runningCount();
    }

    /** Requests waiting to run. */
    public int waiting() {
        return engine.waitingCount();
    }

    /** Tokens this replica generated since it started, counted as each is chosen (a live rate, unlike a request's end). */
    public long generatedTokens() {
        return engine.generatedTokens();
    }

    /** Each stage's KV cache held by this replica's requests, as a share of its budget (0..1). */
    public Map<String, Double> kvCacheUsage() {
        return engine.kvCacheUsage();
    }

    /**
     * Frees abandoned tasks' sequences on the stages that serve now, in one call (best effort). Their runner is gone,
     * so no release would come, and the stages' KV caches would hold their budget until they idle out.
     */
    void releaseAbandoned(List<String> taskIds) {
        engine.releaseAbandoned(taskIds);
    }

    private static long[] tokenize(ServedModel model, String prompt) {
        long[] ids = model.tokenizer().encode(prompt);
        if (ids.length == 0) {
            throw new InvalidRequestException("prompt", "prompt tokenizes to no tokens");
        }
        return ids;
    }

    /** Ends every running and waiting request (the coordinator is stopping) and frees them on the stages. */
    @Override
    public void close() {
        engine.close();
    }
}
