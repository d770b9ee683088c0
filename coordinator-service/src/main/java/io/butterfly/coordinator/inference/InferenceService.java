package io.butterfly.coordinator.inference;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.sampling.Sampler;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.coordinator.inference.sampling.TokenChoice;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ServedModel;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs a generation through the pipeline: one prefill step with the whole prompt, then one step per
 * token. Each step enters the first stage, flows worker to worker, and the last stage sends its logits
 * back to this coordinator, which samples (seeded, so a replayed step picks the same token).
 */
public class InferenceService {

    /**
     * @param maxNewTokens       upper bound for a request's max_tokens
     * @param maxPromptTokens    upper bound for a prompt's length in tokens
     * @param maxPromptChars     upper bound for a text prompt's length in characters, checked before it is tokenized
     * @param maxConcurrentTasks tasks this replica runs at once; one more is refused
     */
    public record Settings(int maxNewTokens, int maxPromptTokens, int maxPromptChars, int maxConcurrentTasks) {
    }

    private final Settings settings;
    private final ControlLog control;
    private final TaskJournal journal;
    private final ModelCatalog catalog;
    private final Pipeline pipeline;
    private final Clock clock;
    private final TaskAdmission admission;
    /** Tasks a runner here holds, from before they are recorded started until their outcome is recorded. */
    private final Set<String> running = ConcurrentHashMap.newKeySet();

    public InferenceService(Settings settings, ControlLog control, TaskJournal journal, ModelCatalog catalog,
                            Pipeline pipeline, Clock clock) {
        this.settings = settings;
        this.control = control;
        this.journal = journal;
        this.catalog = catalog;
        this.pipeline = pipeline;
        this.clock = clock;
        this.admission = new TaskAdmission(settings.maxConcurrentTasks());
    }

    /** Whether a runner on this replica holds {@code taskId} now (see {@link OrphanedTasks}). */
    boolean running(String taskId) {
        return running.contains(taskId);
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

    /** Runs a generation and answers when it is complete. */
    public GenerationResult generate(GenerationRequest request) {
        return run(admit(request), null);
    }

    /**
     * Validates a request and takes its place among the running tasks, so that everything a client can be refused
     * for is refused here, before a streamed answer starts. The place is freed by {@link #run} or by closing it.
     */
    public AdmittedTask admit(GenerationRequest request) {
        RequestValidator.checkInputChoice(request);
        ClusterState state = control.state();
        if (!state.system().acceptsWork()) { // judged here: the task is recorded off the request's path
            throw new NotServingException("the cluster is " + state.system() + ", not READY: " + state.statusMessage());
        }
        ServedModel model = servedModel(state);
        if (request.prompt() != null) {
            RequestValidator.checkPromptChars(request.prompt(), settings.maxPromptChars());
        }
        List<Long> prompt = request.tokenIds() != null
                ? RequestValidator.checkTokenIds(request.tokenIds(), model.config().vocabSize())
                : tokenize(model, request.prompt());
        RequestValidator.checkPromptLength(request.tokenIds() != null ? "token_ids" : "prompt", prompt.size(),
                settings.maxPromptTokens(), model.config().maxPositions());
        int maxTokens = RequestValidator.maxTokens(request, prompt.size(), settings.maxNewTokens(), model.config().maxPositions());
        SamplingParams sampling = RequestValidator.sampling(request);
        StopSequences stop = RequestValidator.stop(request);

        // Resolved before the task is recorded: a task recorded started always has its outcome recorded too.
        Pipeline.Route route = route(state);
        return new AdmittedTask(model, route, prompt, maxTokens, sampling, Boolean.TRUE.equals(request.ignoreEos()),
                stop, admission.admit());
    }

    /**
     * Runs an admitted task to its end and frees its place. {@code listener} (null for none) is told each token as
     * it is chosen; if it throws, the task ends there as failed (e.g. the client of a stream went away).
     */
    public GenerationResult run(AdmittedTask task, TokenListener listener) {
        try (task) {
            return runTask(task, listener);
        }
    }

    /** Records the task started, runs it, and records how it ended; its sequence is released on every stage either way. */
    private GenerationResult runTask(AdmittedTask task, TokenListener listener) {
        String taskId = UUID.randomUUID().toString();
        running.add(taskId);
        try {
            journal.started(taskId, task.prompt().size(), clock.millis());
            return runStarted(taskId, task, listener);
        } finally {
            running.remove(taskId);
        }
    }

    private GenerationResult runStarted(String taskId, AdmittedTask task, TokenListener listener) {
        try {
            GenerationResult result = run(taskId, task, listener);
            journal.finished(taskId, result.tokenIds(), result.finishReason(), clock.millis());
            return result;
        } catch (RuntimeException e) {
            journal.failed(taskId, e.getMessage() == null ? e.toString() : e.getMessage(), clock.millis());
            throw e;
        } finally {
            pipeline.release(task.route(), List.of(taskId));
        }
    }

    private GenerationResult run(String taskId, AdmittedTask task, TokenListener listener) {
        ServedModel model = task.model();
        List<Long> prompt = task.prompt();
        int maxTokens = task.maxTokens();
        Sampler sampler = new Sampler(task.sampling());
        // The text is followed token by token only for a listener or stop strings.
        IncrementalText text = listener == null && task.stop().isEmpty() ? null
                : new IncrementalText(model.tokenizer()::decode, task.stop());
        boolean stopString = false;
        long epoch = control.state().epoch();
        List<Long> generated = new ArrayList<>();
        List<Double> chosenLogprobs = new ArrayList<>();
        List<List<TokenLogprob>> top = new ArrayList<>();
        Map<String, Double> stageMs = new LinkedHashMap<>();
        long start = System.nanoTime();
        long firstToken = 0;
        long[] input = prompt.stream().mapToLong(Long::longValue).toArray();
        // Every stage sizes the sequence's cache for all of it at the first step (and refuses it then, if its
        // budget cannot hold it), so a started task is never refused memory half-way.
        int reserve = prompt.size() + maxTokens;
        int position = 0;
        String finish = "length";
        long pipelineNanos = 0;
        long transportNanos = 0;
        long samplingNanos = 0;
        for (int step = 0; step < maxTokens; step++) {
            long t0 = System.nanoTime();
            StepResult response = pipeline.step(task.route(), new StepInput(taskId, step, epoch, position, input, reserve));
            long t1 = System.nanoTime();
            pipelineNanos += t1 - t0;
            transportNanos += t1 - t0 - addTimings(response.timings(), stageMs);
            float[] logits = response.logits();
            if (response.logitsShape().get(0) != 1 || logits.length != model.config().vocabSize()) {
                throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL,
                        "last stage returned logits of shape " + response.logitsShape());
            }
            TokenChoice choice = choose(sampler, logits, step);
            samplingNanos += System.nanoTime() - t1;
            if (step == 0) {
                firstToken = System.nanoTime();
            }
            generated.add((long) choice.tokenId());
            chosenLogprobs.add(choice.logprob());
            top.add(choice.topLogprobs());
            boolean eos = !task.ignoreEos() && model.config().endsSequence(choice.tokenId());
            IncrementalText.Piece piece = text == null ? null : text.add(choice.tokenId(), eos || step == maxTokens - 1);
            stopString = piece != null && piece.stopped();
            if (listener != null) {
                listener.onToken(new GeneratedToken(taskId, step, choice.tokenId(), piece.text(), choice.logprob(),
                        choice.topLogprobs()));
            }
            position += input.length;
            input = new long[]{choice.tokenId()};
            if (eos || stopString) {
                finish = "stop";
                break;
            }
        }
        long end = System.nanoTime();
        double ttftMs = (firstToken - start) / 1e6;
        double decodeSeconds = (end - firstToken) / 1e9;
        double decodeTps = generated.size() > 1 && decodeSeconds > 0 ? (generated.size() - 1) / decodeSeconds : 0;
        String whole = stopString ? text.textBeforeStop()
                : model.tokenizer().decode(generated.stream().mapToLong(Long::longValue).toArray());
        return new GenerationResult(taskId, model.manifest().modelId(), prompt, generated, whole, finish,
                chosenLogprobs, top, ttftMs, decodeTps, (end - start) / 1e6, stageMs, transportNanos / 1e6,
                pipelineNanos / 1e6, samplingNanos / 1e6);
    }

    /** Samples; logits that cannot be sampled (NaN, +infinity, all -infinity) are the last stage's failure (502). */
    private static TokenChoice choose(Sampler sampler, float[] logits, int step) {
        try {
            return sampler.choose(logits, step);
        } catch (IllegalArgumentException e) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL,
                    "last stage returned logits that cannot be sampled at step " + step + ": " + e.getMessage());
        }
    }

    /** Adds one step's compute time per stage; returns the time the step spent in stages (the rest was transport). */
    private static long addTimings(List<StepResult.StageTiming> timings, Map<String, Double> stageMs) {
        long inStages = 0;
        for (StepResult.StageTiming t : timings) {
            stageMs.merge(t.nodeId(), t.computeNanos() / 1e6, Double::sum);
            inStages += t.wallNanos();
        }
        return inStages;
    }

    /**
     * Frees abandoned tasks' sequences on the stages that serve now, in one call (best effort). Their runner
     * is gone, so no release would come, and the stages' KV caches would hold their budget until they idle out.
     */
    void releaseAbandoned(List<String> taskIds) {
        Pipeline.Route route;
        try {
            route = route(control.state());
        } catch (NotServingException noPipeline) {
            return;
        }
        pipeline.release(route, taskIds);
    }

    /** The stages of the pipeline {@code state} assigns, first to last. */
    private Pipeline.Route route(ClusterState state) {
        List<NodeInfo> stages = new ArrayList<>();
        for (String id : state.pipeline()) {
            NodeRecord n = state.nodes().get(id);
            if (n == null) {
                throw new NotServingException("the pipeline names " + id + ", which is not a member");
            }
            stages.add(n.info());
        }
        if (stages.isEmpty()) {
            throw new NotServingException("no pipeline is assigned");
        }
        return pipeline.route(stages);
    }

    private static List<Long> tokenize(ServedModel model, String prompt) {
        long[] ids = model.tokenizer().encode(prompt);
        if (ids.length == 0) {
            throw new InvalidRequestException("prompt", "prompt tokenizes to no tokens");
        }
        return Arrays.stream(ids).boxed().toList();
    }
}
