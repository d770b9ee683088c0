package io.butterfly.coordinator.inference;

import static org.mockito.ArgumentMatchers.any;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ServedModel;
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
            new GroupCommitTaskJournal.Settings("coordinator-0", Duration.ofMillis(20), 256, 10_000), Clock.systemUTC());
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

    public ControlLog control() {
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

    /** An inference service over this control log whose pipeline steps are what {@code steps} answers. */
    public InferenceService service(Pipeline steps, int maxConcurrentTasks) {
        InferenceService.Settings p = ReadyCluster.props("coordinator-0").inference();
        InferenceService.Settings settings = new InferenceService.Settings(p.maxNewTokens(), p.maxPromptTokens(),
                p.maxPromptChars(), maxConcurrentTasks);
        ModelCatalog catalog = mock(ModelCatalog.class);
        when(catalog.servedFor("root")).thenReturn(new ServedModel(
                new Manifest("tiny", "llama", "1", 2, 0, 16, 512, "F32", List.of(), "root", 0, null, null), TINY, tokenizer));
        return new InferenceService(settings, control, journal, catalog, steps, Clock.systemUTC());
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

    /** Steps whose last stage makes {@code script[step % length]} of each task the likeliest token (logit 5, the rest 0). */
    public static Pipeline following(long[] script) {
        Pipeline steps = mock(Pipeline.class);
        when(steps.step(any(), any())).thenAnswer(call -> {
            float[] logits = new float[TINY.vocabSize()];
            logits[(int) script[call.<StepInput>getArgument(1).step() % script.length]] = 5f;
            return answer(logits);
        });
        return steps;
    }

    /** The last stage's answer: these logits, for one position. */
    public static StepResult answer(float[] logits) {
        return new StepResult() {
            @Override
            public float[] logits() {
                return logits;
            }

            @Override
            public List<Long> logitsShape() {
                return List.of(1L, (long) logits.length);
            }

            @Override
            public List<StageTiming> timings() {
                return List.of();
            }
        };
    }

    @Override
    public void close() {
        tokenizer.close();
        raw.close();
        journal.close();
        control.close();
    }
}
