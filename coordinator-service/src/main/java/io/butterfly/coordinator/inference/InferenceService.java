package io.butterfly.coordinator.inference;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.cluster.TaskRequest;
import io.butterfly.coordinator.control.AppliedStates;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.control.PausedRequests;
import io.butterfly.coordinator.control.ReplicaView;
import io.butterfly.coordinator.inference.engine.EngineCore;
import io.butterfly.coordinator.inference.engine.KvBudgets;
import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.inference.engine.PipelineRouter;
import io.butterfly.coordinator.inference.engine.QueueFullException;
import io.butterfly.coordinator.inference.engine.SchedulerSettings;
import io.butterfly.coordinator.inference.engine.Sequence;
import io.butterfly.coordinator.inference.engine.ServingMetrics;
import io.butterfly.coordinator.inference.sampling.Sampler;
import io.butterfly.coordinator.structured.TokenConstraint;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ServedModel;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Generation on this replica: the request processor in front of the {@link EngineCore}. A request is validated and
 * tokenized here, on the caller's thread, so that everything a client can be refused for is refused before it is
 * queued (and before a stream starts); then the engine runs it with the others, the {@link OutputProcessor} makes its
 * tokens into text, events and answers, and the caller awaits or streams its {@link RequestHandle}. No thread is held
 * for a request, and none waits for the engine's.
 *
 * <p>A client that lost its answer comes back here, at any replica: {@link #resume} gives it the rest of the same
 * generation (from the replicated record, from this replica's engine, or by taking the task over from a replica that
 * is gone or lost its client, and replaying it), and {@link #submitOnce} runs a request at most once per idempotency
 * key. The engine follows the replicated state: it holds while the cluster does not serve and resumes its paused
 * sequences when it does again.
 */
public class InferenceService implements PausedRequests, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(InferenceService.class);
    /** How long a replica waits for a task it is asked about to reach its state (it may lag the task's owner). */
    private static final Duration RECORD_WAIT = Duration.ofSeconds(2);
    /** How long a replica waits for a task's live owner to record its end before it takes the task over. */
    private static final Duration OWNER_GRACE = Duration.ofSeconds(1);
    private static final int MAX_KEY_CHARS = 255;
    /** How long a stream's first event waits for its task's start to be recorded (see {@link #startRecorded}). */
    /** How long a request waits for the control log to record its start before it is refused 503 (no quorum). */
    public static final Duration START_WAIT = Duration.ofSeconds(10);

    /**
     * @param maxNewTokens    upper bound for a request's max_tokens
     * @param maxPromptTokens upper bound for a prompt's length in tokens
     * @param maxPromptChars  upper bound for a text prompt's length in characters, checked before it is tokenized
     * @param replicas        coordinator replicas serving the same stages: each schedules against its share of their
     *                        KV budgets
     * @param recoveryTimeout how long a paused generation waits for the pipeline to serve again before it fails
     * @param tokensPerMinutePerKey tokens (prompt and generated) one API key may spend a minute; 0: no limit
     * @param startWait       how long a request waits for the control log to record its start ({@link #START_WAIT})
     */
    public record Settings(int maxNewTokens, int maxPromptTokens, int maxPromptChars, int replicas,
                           Duration recoveryTimeout, long tokensPerMinutePerKey, Duration startWait) {

        /** Without a per-key token rate. */
        public Settings(int maxNewTokens, int maxPromptTokens, int maxPromptChars, int replicas, Duration recoveryTimeout) {
            this(maxNewTokens, maxPromptTokens, maxPromptChars, replicas, recoveryTimeout, 0, START_WAIT);
        }

        public Settings withTokensPerMinutePerKey(long perMinute) {
            return new Settings(maxNewTokens, maxPromptTokens, maxPromptChars, replicas, recoveryTimeout, perMinute, startWait);
        }

        /** A shorter wait lets a test see the refusal without waiting the production 10 s. */
        public Settings withStartWait(Duration wait) {
            return new Settings(maxNewTokens, maxPromptTokens, maxPromptChars, replicas, recoveryTimeout,
                    tokensPerMinutePerKey, wait);
        }
    }

    /** The router's prefix blocks (the stages' prefix-cache block size) and how many it remembers per pipeline. */
    private static final int ROUTER_BLOCK_TOKENS = 16;
    private static final int ROUTER_BLOCKS = 8192;

    private final Settings settings;
    private final ControlLog control;
    private final AppliedStates applied;
    private final TaskJournal journal;
    /** One engine core per pipeline of the plan; a new request goes where its router says. */
    private final EnginePipelines engine;
    private final OutputProcessor outputs;
    /** The engine following the replicated state: where it sends, and whether it holds. */
    private final EngineServing serving;
    private final TokenBuckets tokenRates;
    /** The served model's tokens as constrained decoding reads them. */
    private final ModelVocabulary vocabularies = new ModelVocabulary();

    public InferenceService(Settings settings, SchedulerSettings scheduling, ControlLog control, ModelCatalog catalog,
                            Pipeline pipeline, TaskJournal journal, ServingMetrics metrics, RequestTracing tracing,
                            Clock clock) {
        this.settings = settings;
        this.control = control;
        this.journal = journal;
        this.engine = new EnginePipelines(i -> new EngineCore(scheduling, settings.recoveryTimeout(), pipeline, metrics),
                new PipelineRouter(ROUTER_BLOCK_TOKENS, ROUTER_BLOCKS));
        this.outputs = new OutputProcessor(engine, journal, metrics, tracing, clock::millis);
        this.applied = AppliedStates.of(control);
        this.serving = new EngineServing(control, catalog, pipeline, journal, engine, settings.replicas());
        this.tokenRates = new TokenBuckets(settings.tokensPerMinutePerKey(), System::nanoTime);
    }

    /**
     * What this replica's stages computed for {@code taskId} and the hash chain of its tokens, if this replica ran it
     * (docs/verified-execution.md).
     */
    public java.util.Optional<io.butterfly.coordinator.inference.engine.Transcript.Snapshot> transcript(String taskId) {
        return outputs.transcripts().get(taskId).map(io.butterfly.coordinator.inference.engine.Transcript::snapshot);
    }

    /**
     * Which workers keep a prefix cache (their last report): while every stage of a pipeline does, a prompt whose
     * blocks it answered lately goes in one step (docs/serving.md#prefix-caching).
     */
    public void prefixCaching(java.util.function.Predicate<String> onWorker) {
        serving.prefixCaching(onWorker);
    }

    /** Every step's result is checked by {@code audit} before the engine uses it (docs/verified-execution.md#audits). */
    public void audit(EngineCore.StepAudit audit) {
        engine.audit(audit);
    }

    /** Whether this replica runs {@code taskId} now (see {@link OrphanedTasks}). */
    boolean running(String taskId) {
        return engine.load().taskIds().contains(taskId);
    }

    /** The model the cluster serves now, or {@link NotServingException} while it serves none. */
    public ServedModel servedModel() {
        return servedModel(control.state());
    }

    private ServedModel servedModel(ClusterState state) {
        return serving.servedModel(state);
    }

    private boolean mine(TaskRecord t) {
        return serving.mine(t);
    }

    /** A request validated and tokenized, ready to queue. */
    public static final class Prepared {
        private final RequestOutput output;

        private Prepared(RequestOutput output) {
            this.output = output;
        }

        /** The handle it will have once queued. */
        public RequestHandle handle() {
            return output;
        }

        /** Asks per-layer snapshot hashes for each of its steps (docs/verified-execution.md); before it is queued. */
        public Prepared withLayerHashes() {
            output.sequence().askLayerHashes();
            return this;
        }
    }

    /**
     * Validates a request and queues it. Everything a client can be refused for is refused here: bad input, a
     * cluster not serving, a sequence no stage could hold (413), a full queue (429). {@code listener} (null for none)
     * is told each token as it is chosen, on the engine's thread: it must hand the token over, not block.
     */
    public RequestHandle submit(GenerationRequest request, TokenListener listener) {
        return submit(request, listener, Requester.ANONYMOUS);
    }

    /** As {@link #submit(GenerationRequest, TokenListener)}, the task {@code requester}'s. */
    public RequestHandle submit(GenerationRequest request, TokenListener listener, Requester requester) {
        return submit(prepare(request, listener, requester));
    }

    /** Validates and tokenizes a request (everything but the queue's room), without queuing it. */
    public Prepared prepare(GenerationRequest request, TokenListener listener) {
        return prepare(request, listener, Requester.ANONYMOUS);
    }

    /** As {@link #prepare(GenerationRequest, TokenListener)}, the task {@code requester}'s. */
    public Prepared prepare(GenerationRequest request, TokenListener listener, Requester requester) {
        return new Prepared(open(request, listener, UUID.randomUUID().toString(), null, true, null, requester));
    }

    public RequestHandle submit(Prepared prepared) {
        checkTokens(List.of(prepared.output));
        engine.submit(prepared.output.sequence());
        chargeTokens(List.of(prepared.output));
        return prepared.output;
    }

    /** Queues prepared requests that run together (an OpenAI list of prompts): all of them, or none. */
    public List<RequestHandle> submitAll(List<Prepared> prepared) {
        List<RequestOutput> outputs = prepared.stream().map(p -> p.output).toList();
        checkTokens(outputs);
        engine.submitAll(outputs.stream().map(RequestOutput::sequence).toList());
        chargeTokens(outputs);
        return prepared.stream().map(p -> (RequestHandle) p.output).toList();
    }

    /**
     * Refuses new requests (429, {@code Retry-After}) while their API key's tokens per minute are spent. Requests
     * without a key are not limited.
     */
    private void checkTokens(List<RequestOutput> outputs) {
        String key = outputs.get(0).sequence().tenant();
        long wait = Sequence.ANONYMOUS.equals(key) ? 0 : tokenRates.admit(key, 0);
        if (wait > 0) {
            throw new QueueFullException("this API key spent its " + tokenRates.perMinute() + " tokens per minute"
                    + " (butterfly.coordinator.engine.tokens-per-minute-per-key): retry in " + wait + " s", wait);
        }
    }

    /** Charges queued requests' prompts to their key now, and what each generates when it ends. */
    private void chargeTokens(List<RequestOutput> outputs) {
        String key = outputs.get(0).sequence().tenant();
        if (!tokenRates.limits() || Sequence.ANONYMOUS.equals(key)) {
            return;
        }
        tokenRates.charge(key, outputs.stream().mapToLong(RequestOutput::promptLength).sum());
        for (RequestOutput out : outputs) {
            out.result().whenComplete((result, failure) -> tokenRates.charge(key, out.sequence().generated().size()));
        }
    }

    /**
     * Runs a request at most once per {@code idempotencyKey}, whichever replica it is sent to and however often: the
     * first start of the key is committed before it runs, and a repeat gets that task's answer (as {@link #resume}
     * gives it: ended, running, or taken over and replayed here), never a second generation. A repeat with another
     * request under the same key is refused, naming the header. Keys are the requester's own: another API key's
     * {@code Idempotency-Key} names none of its tasks.
     */
    public RequestHandle submitOnce(GenerationRequest request, String idempotencyKey, TokenListener listener) {
        return submitOnce(request, idempotencyKey, listener, Requester.ANONYMOUS);
    }

    public RequestHandle submitOnce(GenerationRequest request, String clientKey, TokenListener listener,
                                    Requester requester) {
        checkKey(clientKey);
        String idempotencyKey = TaskRequest.scopedKey(requester.keyId(), clientKey);
        TaskRecord held = control.state().taskWithKey(idempotencyKey);
        if (held != null) {
            return resume(held.taskId(), -1, request, listener, "Idempotency-Key", requester);
        }
        RequestOutput s = open(request, listener, UUID.randomUUID().toString(), null, true, idempotencyKey, requester);
        checkTokens(List.of(s)); // before its start is recorded: a refused request leaves no task
        ClusterState after = journal.commitNow(new TaskEvent.Started(s.taskId(), s.promptLength(), s.request(),
                System.currentTimeMillis()));
        TaskRecord mine = after.tasks().get(s.taskId());
        if (mine == null) { // another replica's start of the same key came first
            TaskRecord first = Objects.requireNonNull(after.taskWithKey(idempotencyKey), "the key's task");
            return resume(first.taskId(), -1, request, listener, "Idempotency-Key", requester);
        }
        s.startRecorded();
        engine.submit(s.sequence());
        chargeTokens(List.of(s));
        return s;
    }

    private static void checkKey(String key) {
        if (key.isEmpty() || key.length() > MAX_KEY_CHARS || !key.chars().allMatch(c -> c >= 0x21 && c <= 0x7e)) {
            throw new InvalidRequestException("Idempotency-Key", "Idempotency-Key must be 1 to " + MAX_KEY_CHARS
                    + " visible ASCII characters");
        }
    }

    /**
     * The rest of task {@code taskId}'s generation after token {@code afterIndex} (-1: all of it), for a client that
     * lost its answer (its stream broke, its replica died) and sends {@code request} again, here: its listener is told
     * the tokens it missed at once, then each new one, and the handle completes with the whole answer. An ended task
     * answers from its record; one this replica runs carries on; one another replica owns (gone, or it lost its
     * client) is taken over: this replica records itself the owner, replays the recorded tokens into new KV caches and
     * generates the rest, the tokens a run without the failure generates. A task this replica's state does not hold
     * (after waiting for it a little: this replica may lag its owner), or that is another API key's, is unknown
     * ({@link UnknownTaskException}): a stream's first event goes out only once its task's start is recorded, so every
     * event id a client holds names a recorded task.
     */
    public RequestHandle resume(String taskId, int afterIndex, GenerationRequest request, TokenListener listener) {
        return resume(taskId, afterIndex, request, listener, Requester.ANONYMOUS);
    }

    public RequestHandle resume(String taskId, int afterIndex, GenerationRequest request, TokenListener listener,
                                Requester requester) {
        return resume(taskId, afterIndex, request, listener, "Last-Event-ID", requester);
    }

    private RequestHandle resume(String taskId, int afterIndex, GenerationRequest request, TokenListener listener,
                                 String field, Requester requester) {
        TaskRecord t = applied.await(s -> s.tasks().containsKey(taskId), RECORD_WAIT).tasks().get(taskId);
        if (t == null || !requester.maySee(t)) {
            throw new UnknownTaskException(field, taskId);
        }
        boolean waited = false;
        for (int attempt = 0; attempt < 3; attempt++) {
            RequestOutput s = open(request, listener, taskId, t.request(), false, null, requester);
            if (t.request() == null || !t.request().sameGeneration(s.request())) {
                throw new InvalidRequestException(field, field + " names task " + taskId
                        + ", which another request started: send the same request again");
            }
            if (t.state().terminal()) {
                return RecordedGeneration.ended(s, t, afterIndex);
            }
            if (mine(t)) {
                RequestHandle running = engine.attach(taskId,
                        here -> ((RequestOutput) here.outputs()).attach(afterIndex, listener)).join();
                if (running != null) {
                    return running;
                }
                if (settled(t)) {
                    return carryOn(s, t, afterIndex); // it left this engine (its client went away): resumed here
                }
                t = control.state().tasks().get(taskId); // it ended here: its outcome is recorded now
                continue;
            }
            if (!waited && !t.paused() && !ownerGone(t)) {
                // Its owner runs it and may be about to record its end: a repeat then needs no takeover.
                waited = true;
                t = awaitEndOrPause(t, OWNER_GRACE);
                continue;
            }
            String from = t.owner();
            t = journal.commitNow(new TaskEvent.Adopted(taskId, from, t.ownerStartedAtMs(), System.currentTimeMillis()))
                    .tasks().get(taskId); // an open task is never pruned
            if (mine(t)) {
                log.info("took task {} over from coordinator {} after {} recorded tokens", taskId, from,
                        t.tokenIds().size());
                engine.releaseAbandoned(List.of(taskId)); // its first caches, if its owner left them on the stages
                return carryOn(s, t, afterIndex);
            }
            // It ended, or another replica took it over first, meanwhile: look again.
        }
        throw new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.ABORTED, "task " + taskId
                + " keeps moving between coordinators: retry");
    }

    /**
     * Completes once the start of {@code handle}'s task is in this replica's state (the recorded request, seed and
     * owner another replica would resume it from), or once it failed (refused before its start); fails with
     * {@link ControlLogUnavailableException} if the log did not record it within {@code settings.startWait()} (no quorum: a
     * replica left alone). A stream hands out no event id before, so that every id a client holds names a committed
     * task; one whose start is not recorded must fail instead of streaming (it used to stream after the wait: two
     * coordinator kills left the third alone, its streams went out, and their starts, queued at a replica that was
     * killed in turn, were known nowhere). Costs a stream's first event a flush interval and a commit.
     */
    public CompletableFuture<?> startRecorded(RequestHandle handle) {
        String taskId = handle.taskId();
        CompletableFuture<ClusterState> inState = applied.when(s -> s.tasks().containsKey(taskId));
        handle.result().whenComplete((result, failure) -> {
            if (failure != null) {
                inState.complete(null); // refused or failed: there is nothing to resume
            }
        });
        return inState.orTimeout(settings.startWait().toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
                .handle((state, timedOut) -> {
                    if (timedOut != null) {
                        throw new ControlLogUnavailableException("control log unavailable: the start of task " + taskId
                                + " was not committed within " + settings.startWait().toSeconds() + " s (no quorum of coordinator"
                                + " replicas): retry", timedOut);
                    }
                    return state;
                });
    }

    /** Whether the replica owning {@code t} does not answer (asked over the control log's group), or is none of it. */
    private boolean ownerGone(TaskRecord t) {
        return control.replicaViews().stream()
                .noneMatch(v -> v.replicaId().equals(t.owner()) && !ReplicaView.UNREACHABLE.equals(v.role()));
    }

    /** {@code t} as this replica's state holds it once it ended or paused, or after {@code timeout}. */
    private TaskRecord awaitEndOrPause(TaskRecord t, Duration timeout) {
        return applied.await(s -> {
            TaskRecord now = s.tasks().get(t.taskId());
            return now.state().terminal() || now.paused();
        }, timeout).tasks().get(t.taskId());
    }

    /**
     * Whether {@code t} is as this replica last recorded it; if not, waits for what it recorded to be committed (a
     * task that just ended here has its outcome on its way to the log).
     */
    private boolean settled(TaskRecord t) {
        try {
            journal.flush(Duration.ofSeconds(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return control.state().tasks().get(t.taskId()).equals(t);
    }

    /** Carries task {@code t} on here from its record: its tokens so far replayed, then the rest generated. */
    private RequestHandle carryOn(RequestOutput s, TaskRecord t, int afterIndex) {
        if (t.request().promptTokenIds().isEmpty()) {
            throw new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.FAILED_PRECONDITION,
                    "task " + t.taskId() + " has no recorded prompt to resume from");
        }
        String finish = RecordedGeneration.replayInto(s, t);
        if (finish != null) { // its last tokens ended it, but its end was not recorded: it ends now
            s.tellAfter(afterIndex);
            journal.finished(s.taskId(), s.sequence().generated(), finish, System.currentTimeMillis());
            s.answer(finish, System.nanoTime());
            return s;
        }
        s.resumeAfter(afterIndex);
        engine.submitReplay(s.sequence());
        return s;
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

    /**
     * Validates and tokenizes {@code request} into a sequence of task {@code taskId}, {@code requester}'s; with
     * {@code forNewWork} the cluster must serve now (a client resuming a task may come back while it recovers). A task
     * already {@code recorded} keeps its seed, key and owner.
     */
    private RequestOutput open(GenerationRequest request, TokenListener listener, String taskId, TaskRequest recorded,
                               boolean forNewWork, String newKey, Requester requester) {
        String idempotencyKey = recorded == null ? newKey : recorded.idempotencyKey();
        String ownerKey = recorded == null ? requester.keyId() : recorded.ownerKey();
        long arrived = System.nanoTime();
        RequestValidator.checkInputChoice(request);
        ClusterState state = control.state();
        if (forNewWork && !state.acceptsNewWork()) { // judged from this replica's state: a pipeline serves
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
        if (recorded != null) {
            sampling = new SamplingParams(sampling.temperature(), sampling.topP(), sampling.topK(), recorded.seed(),
                    sampling.logprobs());
        }
        StopSequences stop = RequestValidator.stop(request);
        if (state.acceptsNewWork()) {
            serving.serve(state, model);
        }
        KvBudgets.Stage full = serving.neverFits(prompt.length + maxTokens);
        if (full != null) {
            throw new InvalidRequestException("max_tokens", "a sequence of " + prompt.length + " prompt and "
                    + maxTokens + " new tokens needs more KV cache on " + full.nodeId() + " than its whole budget for"
                    + " this coordinator: ask for fewer tokens", true);
        }
        // The text is followed token by token only for a listener or stop strings.
        IncrementalText text = listener == null && stop.isEmpty() ? null
                : new IncrementalText(model.tokenizer()::decode, stop);
        ResponseFormat format = request.format();
        TokenConstraint constraint = format.constrained()
                ? new TokenConstraint(format.grammar("response_format"), vocabularies.of(model)) : null;
        TaskRequest asked = TaskRequest.of(Arrays.stream(prompt).boxed().toList(), maxTokens, sampling.temperature(),
                sampling.topP(), sampling.topK(), sampling.seed(), sampling.logprobs(),
                Boolean.TRUE.equals(request.ignoreEos()), request.stop(), idempotencyKey, ownerKey)
                .withResponseFormat(format.recorded());
        return new RequestOutput(outputs, taskId, ownerKey == null ? Sequence.ANONYMOUS : ownerKey, model, prompt,
                maxTokens, new Sequence.Decoding(new Sampler(sampling), model.config(),
                Boolean.TRUE.equals(request.ignoreEos()), constraint), asked, text, listener, arrived);
    }

    /** Requests running now (holding KV caches on the stages, or waiting to resume). */
    public int running() {
        return engine.load().running();
    }

    /** Requests waiting to run. */
    public int waiting() {
        return engine.load().waiting();
    }

    /** Requests waiting for the pipeline to serve again (paused by a failed stage, or replaying their history). */
    public int paused() {
        return engine.load().paused();
    }

    @Override
    public int pausedRequests() {
        return paused();
    }

    /** Tokens this replica generated since it started, counted as each is chosen (a live rate, unlike a request's end). */
    public long generatedTokens() {
        return outputs.generatedTokens();
    }

    /** Per pipeline of the plan (docs/scale-out.md), its requests and free KV cache as the router weighs them. */
    public List<PipelineRouter.Load> pipelineLoads() {
        return engine.loads();
    }

    /** Each stage's KV cache held by this replica's requests, as a share of its budget (0..1). */
    public Map<String, Double> kvCacheUsage() {
        return engine.load().kvCacheUsage();
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

    /**
     * Stops the engine: running and waiting requests leave, recorded paused with their progress for a client that
     * resumes them at another replica, and their caches are freed on the stages.
     */
    @Override
    public void close() {
        engine.close();
        serving.close();
    }
}
