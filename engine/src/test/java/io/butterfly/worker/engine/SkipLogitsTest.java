package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A chunk that skips its logits (a prompt chunk before the last, a token replayed after a resume) gets no row from
 * the head, and changes nothing else: the caches it fills give the later steps the logits a run that computed every
 * row gets, bit for bit.
 */
class SkipLogitsTest {

    @TempDir
    Path dir;

    @Test
    void skippedRowsAreLeftOutAndTheLaterLogitsAreTheSame() throws Exception {
        ModelConfig config = ModelFixtures.llamaGqa();
        Path shards = ModelFixtures.write(config, ModelFixtures.weightsOnly().withPerLayerFiles(), 5, dir.resolve("shards"));
        ExecutorOptions executor = ExecutorOptions.cpu().withBatchInvariant(true);
        int v = config.vocabSize();
        long[] a = {3, 14, 15, 92, 65, 35};
        long[] b = {2, 71, 82};
        try (Pipeline skipping = Pipeline.split(config, new int[]{0, 2, 4}, shards, executor);
             Pipeline computing = Pipeline.split(config, new int[]{0, 2, 4}, shards, executor)) {
            // Every sequence skips: no head at all, an empty [0, vocab].
            StageResult none = skipping.step(List.of(new SequenceChunk("a", 0, 4, 16, true)), Arrays.copyOf(a, 4));
            assertThat(none.logits()).isTrue();
            assertThat(none.shape()).containsExactly(0, v);
            assertThat(none.toFloats()).isEmpty();
            StageResult all = computing.step(List.of(new SequenceChunk("a", 0, 4, 16, false)), Arrays.copyOf(a, 4));
            assertThat(all.shape()).containsExactly(1, v);

            // One of two skips: one row, the other sequence's, the same as when both rows are computed.
            long[] ids = {a[4], b[0], b[1], b[2]};
            StageResult one = skipping.step(List.of(new SequenceChunk("a", 4, 1, 16, true),
                    new SequenceChunk("b", 0, 3, 16, false)), ids);
            StageResult both = computing.step(List.of(new SequenceChunk("a", 4, 1, 16, false),
                    new SequenceChunk("b", 0, 3, 16, false)), ids);
            assertThat(one.shape()).containsExactly(1, v);
            assertThat(one.toFloats()).isEqualTo(Arrays.copyOfRange(both.toFloats(), v, 2 * v));

            // The skipped steps filled the caches as the computed ones did: the next logits are bit for bit the same.
            List<SequenceChunk> next = List.of(new SequenceChunk("a", 5, 1, 16, false), new SequenceChunk("b", 3, 1, 16, false));
            long[] nextIds = {a[5], 7};
            assertThat(skipping.step(next, nextIds).toFloats()).isEqualTo(computing.step(next, nextIds).toFloats());
        }
    }
}
