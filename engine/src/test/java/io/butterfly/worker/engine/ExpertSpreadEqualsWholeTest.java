package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A stage whose experts are spread over expert groups of other partitions (each loading only its experts, asked for
 * the rows that chose them, their sums merged by the reduction tree) gives the logits of one stage holding every
 * expert, bit for bit: whole model and two stages, over 2, 3 and 4 groups, a batched prefill and batched decode steps.
 */
class ExpertSpreadEqualsWholeTest {

    @TempDir
    Path dir;

    static Stream<Arguments> models() {
        return Stream.of(
                Arguments.of("mixtral", ModelFixtures.mixtral(), ModelFixtures.weightsOnly()),
                Arguments.of("qwen2-moe", ModelFixtures.qwen2Moe(), ModelFixtures.weightsOnly().withAttentionBias(true)),
                Arguments.of("qwen3-moe", ModelFixtures.qwen3Moe(), ModelFixtures.weightsOnly()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void spreadExpertsGiveTheWholeModelsBits(String name, ModelConfig config, ModelGenerator.Options options) throws Exception {
        ExecutorOptions executor = ExecutorOptions.cpu();
        Path model = ModelFixtures.write(config, options, 11, dir.resolve("model"));
        Path file = model.resolve("model.safetensors");
        List<long[]> inputs = new ArrayList<>();
        List<byte[]> expected;
        try (Pipeline whole = Pipeline.whole(config, model, executor)) {
            expected = run(whole::step, config, inputs, null);
        }
        int experts = config.experts().experts();
        int[][] groupings = {{0, 4, experts}, {0, 3, 6, experts}, {0, 2, 4, 6, experts}};
        int[][] stageBounds = {{0, config.numLayers()}, {0, 2, config.numLayers()}};
        for (int[] bounds : stageBounds) {
            for (int[] cuts : groupings) {
                try (Spread spread = new Spread(config, bounds, cuts, file, executor)) {
                    List<byte[]> actual = run(spread::step, config, null, inputs);
                    for (int step = 0; step < expected.size(); step++) {
                        assertThat(actual.get(step)).as("stages %s, groups %s, step %d", Arrays.toString(bounds),
                                Arrays.toString(cuts), step).isEqualTo(expected.get(step));
                    }
                    assertThat(spread.rowsSent.get()).as("rows sent to other groups").isPositive();
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void anExpertGroupRefusesALayerOrRowsItDoesNotHold(String name, ModelConfig config, ModelGenerator.Options options)
            throws Exception {
        Path file = ModelFixtures.write(config, options, 11, dir.resolve("model")).resolve("model.safetensors");
        int experts = config.experts().experts();
        List<ExpertPlacement.Group> groups = List.of(new ExpertPlacement.Group("a", "", 0, 0, 4),
                new ExpertPlacement.Group("b", "", 0, 4, experts));
        PartitionSpec spec = new PartitionSpec(config, 0, 2, false, false, new ExpertPlacement(groups, 1, experts));
        try (DjlPartitionExecutor group = DjlPartitionExecutor.load(spec, List.of(file), ExecutorOptions.cpu())) {
            int h = config.hiddenSize();
            int k = config.experts().perToken();
            int sparse = config.experts().sparse(0) ? 0 : 1;
            assertThatThrownBy(() -> group.expertGroup(3, 1, new float[h], new long[k], new float[k]))
                    .hasMessageContaining("layer 3 is not a sparse layer of this expert group's [0, 2)");
            assertThatThrownBy(() -> group.expertGroup(sparse, 2, new float[h], new long[k], new float[k]))
                    .hasMessageContaining("expected 2 rows");
            assertThatThrownBy(() -> group.forward(List.of(new SequenceChunk("a", 0, 1)), new StageInput.Tokens(new long[]{1})))
                    .hasMessageContaining("expert group");
            assertThat(group.expertGroup(sparse, 1, new float[h], new long[]{4, 5}, new float[]{0.5f, 0.5f})).hasSize(h);
        }
    }

    /**
     * A group's worker lost mid-generation: the step fails (to be retried), no KV cache keeps half of it; a spare
     * loading the same experts answers the retried step and the rest, and the logits are the fault-free ones.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void aLostGroupFailsTheStepAndASpareResumesItBitForBit(String name, ModelConfig config, ModelGenerator.Options options)
            throws Exception {
        ExecutorOptions executor = ExecutorOptions.cpu();
        Path model = ModelFixtures.write(config, options, 11, dir.resolve("model"));
        Path file = model.resolve("model.safetensors");
        List<long[]> inputs = new ArrayList<>();
        List<byte[]> expected;
        try (Pipeline whole = Pipeline.whole(config, model, executor)) {
            expected = run(whole::step, config, inputs, null);
        }
        int experts = config.experts().experts();
        try (Spread spread = new Spread(config, new int[]{0, config.numLayers()}, new int[]{0, 3, 6, experts}, file, executor)) {
            String lost = "stage0-group1";
            AtomicInteger steps = new AtomicInteger();
            List<byte[]> actual = run((batch, ids) -> {
                if (steps.incrementAndGet() == 3) { // the group's worker dies before the third step
                    spread.groups.get(lost).close();
                    spread.failing = lost;
                    assertThatThrownBy(() -> spread.step(batch, ids)).isInstanceOf(ExpertGroupUnavailableException.class)
                            .hasMessageContaining(lost);
                    try { // a spare takes the group: it loads the same experts
                        spread.groups.put(lost, DjlPartitionExecutor.load(spread.groups.get(lost).spec(), List.of(file),
                                executor));
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                    spread.failing = null;
                }
                return spread.step(batch, ids);
            }, config, null, inputs);
            for (int step = 0; step < expected.size(); step++) {
                assertThat(actual.get(step)).as("step %d", step).isEqualTo(expected.get(step));
            }
        }
    }

    interface Stepper {
        StageResult step(List<SequenceChunk> batch, long[] ids);
    }

    /** Stages over {@code bounds}, each with its experts cut at {@code cuts}: group 0 on the stage, the others apart. */
    private static final class Spread implements AutoCloseable {

        final List<DjlPartitionExecutor> stages = new ArrayList<>();
        final Map<String, DjlPartitionExecutor> groups = new HashMap<>();
        final AtomicInteger rowsSent = new AtomicInteger();
        /** A group whose worker is gone: asking it fails, as a call to a dead worker does. */
        volatile String failing;

        Spread(ModelConfig config, int[] bounds, int[] cuts, Path file, ExecutorOptions options) throws Exception {
            int topK = config.experts().perToken();
            ExpertExchange exchange = (g, layer, rows, hidden, chosen, weights) -> {
                for (int r = 0; r < rows; r++) { // only rows that chose one of the group's experts are sent
                    boolean mine = false;
                    for (int k = 0; k < topK; k++) {
                        mine |= g.holds(chosen[r * topK + k]);
                    }
                    assertThat(mine).as("row %d sent to group %s", r, g.nodeId()).isTrue();
                }
                rowsSent.addAndGet(rows);
                if (g.nodeId().equals(failing)) {
                    return CompletableFuture.failedFuture(new java.io.IOException("UNAVAILABLE: " + g.nodeId() + " is gone"));
                }
                DjlPartitionExecutor holder = groups.get(g.nodeId());
                return CompletableFuture.supplyAsync(() -> holder.expertGroup(layer, rows, hidden, chosen, weights));
            };
            for (int s = 0; s + 1 < bounds.length; s++) {
                List<ExpertPlacement.Group> placement = new ArrayList<>();
                for (int g = 0; g + 1 < cuts.length; g++) {
                    placement.add(new ExpertPlacement.Group("stage" + s + "-group" + g, "", 0, cuts[g], cuts[g + 1]));
                }
                for (int g = 1; g < placement.size(); g++) {
                    groups.put(placement.get(g).nodeId(), DjlPartitionExecutor.load(new PartitionSpec(config, bounds[s],
                            bounds[s + 1], false, false, new ExpertPlacement(placement, g, cuts[cuts.length - 1])),
                            List.of(file), options));
                }
                stages.add(DjlPartitionExecutor.load(new PartitionSpec(config, bounds[s], bounds[s + 1], s == 0,
                        s + 2 == bounds.length, new ExpertPlacement(placement, 0, cuts[cuts.length - 1])), List.of(file),
                        options.withExperts(exchange)));
            }
        }

        StageResult step(List<SequenceChunk> batch, long[] ids) {
            StageInput input = new StageInput.Tokens(ids);
            StageResult result = null;
            for (DjlPartitionExecutor stage : stages) {
                result = stage.forward(batch, input);
                input = new StageInput.Hidden(Pipeline.wireCopy(result.littleEndianFloats()));
            }
            return result;
        }

        @Override
        public void close() {
            stages.forEach(DjlPartitionExecutor::close);
            groups.values().forEach(DjlPartitionExecutor::close);
        }
    }

    /** Three sequences: a batched prefill (7, 3 and 5 tokens), then batched greedy decode steps. */
    private static List<byte[]> run(Stepper p, ModelConfig config, List<long[]> record, List<long[]> replay) {
        Random rnd = new Random(5);
        List<byte[]> outputs = new ArrayList<>();
        long[] ids = replay != null ? replay.get(0) : rnd.longs(15, 0, config.vocabSize()).toArray();
        List<SequenceChunk> batch = List.of(new SequenceChunk("a", 0, 7), new SequenceChunk("b", 0, 3),
                new SequenceChunk("c", 0, 5));
        for (int step = 0; step < 6; step++) {
            if (record != null) {
                record.add(ids);
            }
            StageResult r = p.step(batch, ids);
            outputs.add(Pipeline.bytes(r));
            float[] logits = r.toFloats();
            int v = config.vocabSize();
            long[] greedy = {Pipeline.argMax(logits, 0, v), Pipeline.argMax(logits, v, 2 * v), Pipeline.argMax(logits, 2 * v, 3 * v)};
            ids = replay != null && step + 1 < replay.size() ? replay.get(step + 1) : greedy;
            batch = List.of(new SequenceChunk("a", 7 + step, 1), new SequenceChunk("b", 3 + step, 1),
                    new SequenceChunk("c", 5 + step, 1));
        }
        return outputs;
    }
}
