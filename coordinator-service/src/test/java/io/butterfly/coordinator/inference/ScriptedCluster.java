package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.ServingMetrics;
import io.butterfly.coordinator.inference.engine.Pipeline;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.inference.engine.SchedulerSettings;
import io.butterfly.coordinator.model.Tokenizer;
import io.butterfly.coordinator.tokenizer.DjlTokenizers;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;

/**
 * What the scripted inference tests serve from: an in-memory control log bootstrapped to READY
 * ({@link ReadyCluster}), the journal that records tasks in it, and the tiny model's generated tokenizer. The pipeline's
 * steps are the test's to script.
 */
public final class ScriptedCluster implements AutoCloseable {

    /** The tiny Llama served: vocabulary 512, end-of-sequence token 2. */
    public static final ModelConfig TINY = new ModelConfig(Architecture.LLAMA, 2, 16, 2, 2, 32, 512, 64, 1e-5,
            10000.0, false, 1, 2);

    private final InMemoryControlLog control = new InMemoryControlLog();
    private final GroupCommitTaskJournal journal = GroupCommitTaskJournal.start(control,
            new GroupCommitTaskJournal.Settings("coordinator-0", Duration.ofMillis(20), Duration.ofMillis(20),
                    256, 10_000), Clock.systemUTC());
    /** The tokenizer served, opened as the coordinator opens it. */
    private final Tokenizer tokenizer;
    /** The same file read directly, to script token ids without special tokens. */
    private final HuggingFaceTokenizer raw;

    public ScriptedCluster(Path dir) throws IOException {
        ReadyCluster.bootstrap(control);
        Path file = TestTokenizers.write(TINY, dir);
        tokenizer = new DjlTokenizers().open(file);
        raw = HuggingFaceTokenizer.newInstance(file);
    }

    public InMemoryControlLog control() {
        return control;
    }

    /** The replicated state once every task event recorded so far is committed (the journal records them later). */
    public ClusterState recorded() {
        try {
            if (!journal.flush(Duration.ofSeconds(10))) {
                throw new AssertionError("the task journal did not commit within 10 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        return control.state();
    }

    public Tokenizer tokenizer() {
        return tokenizer;
    }

    /** The engine's settings the scripted tests run with: small batches, a queue of four. */
    public static final SchedulerSettings SCHEDULING = new SchedulerSettings(8, 64, 32, 4, 0);

    /** An inference service over this control log whose pipeline steps are what {@code steps} answers. */
    public InferenceService service(Pipeline steps) {
        return service(steps, SCHEDULING);
    }

    public InferenceService service(Pipeline steps, SchedulerSettings scheduling) {
        return service(steps, scheduling, Duration.ofSeconds(60), null);
    }

    /** An inference service whose model has {@code chatTemplate} (null: none). */
    public InferenceService service(Pipeline steps, ChatTemplate chatTemplate) {
        return service(steps, SCHEDULING, Duration.ofSeconds(60), chatTemplate);
    }

    /** @param recoveryTimeout how long a paused generation waits for the pipeline */
    public InferenceService service(Pipeline steps, SchedulerSettings scheduling, Duration recoveryTimeout) {
        return service(steps, scheduling, recoveryTimeout, null);
    }

    /** @param tokensPerMinutePerKey tokens one API key may spend a minute (0: no limit) */
    public InferenceService service(Pipeline steps, SchedulerSettings scheduling, Duration recoveryTimeout,
                                    long tokensPerMinutePerKey) {
        return service(steps, scheduling, recoveryTimeout, null, tokensPerMinutePerKey);
    }

    private InferenceService service(Pipeline steps, SchedulerSettings scheduling, Duration recoveryTimeout,
                                     ChatTemplate chatTemplate) {
        return service(steps, scheduling, recoveryTimeout, chatTemplate, 0);
    }

    /**
     * An inference service whose model has {@code chatTemplate} and {@code maxPositions} positions (a real model's
     * template, with tools, writes prompts longer than TINY's 64).
     */
    public InferenceService service(Pipeline steps, ChatTemplate chatTemplate, int maxPositions) {
        return service(steps, SCHEDULING, Duration.ofSeconds(60), chatTemplate, 0, maxPositions);
    }

    private InferenceService service(Pipeline steps, SchedulerSettings scheduling, Duration recoveryTimeout,
                                     ChatTemplate chatTemplate, long tokensPerMinutePerKey) {
        return service(steps, scheduling, recoveryTimeout, chatTemplate, tokensPerMinutePerKey, TINY.maxPositions());
    }

    private InferenceService service(Pipeline steps, SchedulerSettings scheduling, Duration recoveryTimeout,
                                     ChatTemplate chatTemplate, long tokensPerMinutePerKey, int maxPositions) {
        ModelConfig config = new ModelConfig(TINY.architecture(), TINY.numLayers(), TINY.hiddenSize(),
                TINY.numHeads(), TINY.numKvHeads(), TINY.intermediateSize(), TINY.vocabSize(), maxPositions,
                TINY.normEps(), TINY.ropeTheta(), TINY.tieWordEmbeddings(), TINY.bosTokenId(), TINY.eosTokenId(),
                TINY.ropeScaling(), TINY.moreEosTokenIds(), TINY.qkNorm(), TINY.experts());
        ModelCatalog catalog = mock(ModelCatalog.class);
        when(catalog.servedFor("root")).thenReturn(new ServedModel(
                new Manifest("tiny", "llama", "1", 2, 0, 16, 512, "F32", List.of(), "root", 0, null, null), config, tokenizer,
                chatTemplate));
        InferenceService service = new InferenceService(ReadyCluster.props("coordinator-0").inference(1, recoveryTimeout)
                .withTokensPerMinutePerKey(tokensPerMinutePerKey).withStartWait(startWait), scheduling, control, catalog, steps, journal, ServingMetrics.NONE, RequestTracing.NONE, Clock.systemUTC());
        services.add(service);
        return service;
    }

    private final List<InferenceService> services = new java.util.ArrayList<>();
    private Duration startWait = InferenceService.START_WAIT;

    /** Services made after this wait {@code wait} for the log to record a start (a test of the refusal need not wait 10 s). */
    public void startWait(Duration wait) {
        startWait = wait;
    }

    /** Token ids that decode to "the✓": a word, then a three-byte character (a token per byte). */
    public long[] wordThenCheckMark() {
        long[] word = raw.encode("the", false, false).getIds();
        long[] mark = raw.encode("✓", false, false).getIds();
        long[] script = new long[word.length + mark.length];
        System.arraycopy(word, 0, script, 0, word.length);
        System.arraycopy(mark, 0, script, word.length, mark.length);
        return script;
    }

    /** Steps whose last stage makes {@code script[step % length]} of each sequence the likeliest token. */
    public static ScriptedPipeline following(long[] script) {
        return ScriptedPipeline.following(TINY.vocabSize(), script);
    }

    @Override
    public void close() {
        services.forEach(InferenceService::close);
        tokenizer.close();
        raw.close();
        journal.close();
        control.close();
    }
}
