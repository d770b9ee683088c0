package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A resume replays a sequence's history through every stage: a stage that kept the sequence's cache answers each
 * replayed step with the rows it sent the first time, without computing; a stage that lost it (a spare, loaded anew)
 * computes them; the next logits are bit for bit those of a run without the failure. A step that feeds other inputs
 * from an earlier position is computed anew from there.
 */
class ReplayAnsweredTest {

    @TempDir
    Path dir;

    @Test
    void keptStagesAnswerTheReplayAndTheNextLogitsAreThoseOfARunWithoutTheFailure() throws Exception {
        ModelConfig config = ModelFixtures.llamaGqa();
        Path shards = ModelFixtures.write(config, ModelFixtures.weightsOnly().withPerLayerFiles(), 9, dir.resolve("shards"));
        int v = config.vocabSize();
        Random random = new Random(42);
        long[] prompt = random.longs(7, 0, v).toArray();
        int chunk = 4; // the prompt in chunks [0, 4) and [4, 7), as the scheduler cuts it
        int[] bounds = {0, 1, 3, 4};
        try (Pipeline pipeline = Pipeline.split(config, bounds, shards, ExecutorOptions.cpu())) {
            List<DjlPartitionExecutor> stages = new ArrayList<>(pipeline.stages());
            // The first run: the prompt, then greedy decodes; the logits of every step that samples.
            List<Long> tokens = new ArrayList<>(Arrays.stream(prompt).boxed().toList());
            List<float[]> logits = new ArrayList<>();
            step(stages, new SequenceChunk("s", 0, chunk, 32, true), ids(tokens, 0, chunk));
            logits.add(step(stages, new SequenceChunk("s", chunk, 3, 32, false), ids(tokens, chunk, 3)));
            for (int i = 0; i < 6; i++) {
                tokens.add(Pipeline.argMax(logits.get(logits.size() - 1), 0, v));
                int at = tokens.size() - 1;
                logits.add(step(stages, new SequenceChunk("s", at, 1, 32, false), ids(tokens, at, 1)));
            }

            // The middle stage dies with its cache; a spare loads the same range. The history (all tokens but the
            // last chosen) is replayed cut as the first time, then the last token asks for logits.
            PartitionSpec middle = stages.get(1).spec();
            stages.get(1).close();
            try (DjlPartitionExecutor spare = DjlPartitionExecutor.load(middle, Pipeline.shardsFor(middle, shards),
                    ExecutorOptions.cpu())) {
                stages.set(1, spare);
                long[] answeredBefore = stages.stream().mapToLong(DjlPartitionExecutor::answeredTokens).toArray();
                int last = tokens.size() - 1;
                step(stages, new SequenceChunk("s", 0, chunk, 32, true), ids(tokens, 0, chunk));
                step(stages, new SequenceChunk("s", chunk, 3, 32, true), ids(tokens, chunk, 3));
                for (int at = prompt.length; at < last; at++) {
                    step(stages, new SequenceChunk("s", at, 1, 32, true), ids(tokens, at, 1));
                }
                float[] resumed = step(stages, new SequenceChunk("s", last, 1, 32, false), ids(tokens, last, 1));

                assertThat(resumed).isEqualTo(logits.get(logits.size() - 1));
                // The first stage answered every replayed position, the spare computed them all, and the last stage,
                // fed what the spare sent (the same bits as the first time), answered all but the one that samples.
                assertThat(stages.get(0).answeredTokens() - answeredBefore[0]).isEqualTo(last + 1);
                assertThat(stages.get(1).answeredTokens() - answeredBefore[1]).isZero();
                assertThat(stages.get(2).answeredTokens() - answeredBefore[2]).isEqualTo(last);
                assertThat(stages.stream().mapToInt(s -> s.cachedLength("s")).toArray()).containsOnly(last + 1);

                // Other tokens from an earlier position: every stage computes anew from there, as for a sequence
                // that had those tokens from the start.
                long other = (tokens.get(last) + 1) % v;
                float[] changed = step(stages, new SequenceChunk("s", last, 1, 32, false), new long[]{other});
                List<Long> otherTokens = new ArrayList<>(tokens.subList(0, last));
                otherTokens.add(other);
                step(stages, new SequenceChunk("fresh", 0, chunk, 32, true), ids(otherTokens, 0, chunk));
                step(stages, new SequenceChunk("fresh", chunk, 3, 32, true), ids(otherTokens, chunk, 3));
                float[] fresh = null;
                for (int at = prompt.length; at <= last; at++) {
                    fresh = step(stages, new SequenceChunk("fresh", at, 1, 32, at < last), ids(otherTokens, at, 1));
                }
                assertThat(changed).isEqualTo(fresh);
                stages.forEach(s -> s.release("s"));
                stages.forEach(s -> s.release("fresh"));
            }
        }
    }

    private static long[] ids(List<Long> tokens, int from, int n) {
        return tokens.subList(from, from + n).stream().mapToLong(Long::longValue).toArray();
    }

    /** One step through the stages; the last one's logits (empty when the chunk skips them). */
    private static float[] step(List<DjlPartitionExecutor> stages, SequenceChunk chunk, long[] ids) {
        StageInput input = new StageInput.Tokens(ids);
        StageResult result = null;
        for (DjlPartitionExecutor stage : stages) {
            result = stage.forward(List.of(chunk), input);
            input = new StageInput.Hidden(Pipeline.wireCopy(result.littleEndianFloats()));
        }
        return result.toFloats();
    }
}
