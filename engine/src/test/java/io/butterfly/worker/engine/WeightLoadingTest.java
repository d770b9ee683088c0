package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which tensors a partition loads, and how bad weights or devices are reported. */
class WeightLoadingTest {

    @TempDir
    static Path dir;

    private static final ModelConfig CONFIG = ModelFixtures.llamaGqa();
    private static Path model;
    private static Path shards;

    @BeforeAll
    static void write() throws Exception {
        model = ModelFixtures.write(CONFIG, ModelFixtures.weightsOnly(), 2, dir.resolve("model"));
        shards = ModelFixtures.write(CONFIG, ModelFixtures.weightsOnly().withPerLayerFiles(), 2, dir.resolve("shards"));
    }

    private static long layerParams(ModelConfig c) {
        long h = c.hiddenSize();
        return 2 * h + 2 * h * (long) c.numHeads() * c.headDim() + 2 * h * c.kvDim() + 3 * h * c.intermediateSize();
    }

    @Test
    void aMiddleStageGivenTheWholeFileLoadsOnlyItsLayers() throws Exception {
        PartitionSpec middle = new PartitionSpec(CONFIG, 1, 3, false, false);
        try (DjlPartitionExecutor exec = DjlPartitionExecutor.load(middle, List.of(model.resolve("model.safetensors")), ExecutorOptions.cpu())) {
            assertThat(exec.weightBytes()).isEqualTo(2 * layerParams(CONFIG) * Float.BYTES);
        }
    }

    @Test
    void edgeStagesLoadEmbeddingAndHead() throws Exception {
        long embed = (long) CONFIG.vocabSize() * CONFIG.hiddenSize();
        try (DjlPartitionExecutor first = DjlPartitionExecutor.load(new PartitionSpec(CONFIG, 0, 1, true, false),
                Pipeline.shardsFor(new PartitionSpec(CONFIG, 0, 1, true, false), shards), ExecutorOptions.cpu());
             DjlPartitionExecutor last = DjlPartitionExecutor.load(new PartitionSpec(CONFIG, 3, 4, false, true),
                     Pipeline.shardsFor(new PartitionSpec(CONFIG, 3, 4, false, true), shards), ExecutorOptions.cpu())) {
            assertThat(first.weightBytes()).isEqualTo((embed + layerParams(CONFIG)) * Float.BYTES);
            assertThat(last.weightBytes()).isEqualTo((layerParams(CONFIG) + CONFIG.hiddenSize() + embed) * Float.BYTES);
        }
    }

    @Test
    void aMissingLayerFileNamesTheMissingTensor() {
        PartitionSpec spec = new PartitionSpec(CONFIG, 1, 3, false, false);
        assertThatThrownBy(() -> DjlPartitionExecutor.load(spec, List.of(shards.resolve(ModelGenerator.layerFile(1))), ExecutorOptions.cpu()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("model.layers.2.");
    }

    @Test
    void weightsThatDoNotFitTheConfigAreRefused() {
        ModelConfig wider = new ModelConfig(Architecture.LLAMA, 4, 64, 4, 2, 128, 128, 64, 1e-5, 10000.0, false, 1, 2);
        assertThatThrownBy(() -> DjlPartitionExecutor.load(PartitionSpec.whole(wider), List.of(model.resolve("model.safetensors")),
                ExecutorOptions.cpu())).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("shape");
    }

    @Test
    void devicesAreCpuGpuOrAuto() throws Exception {
        PartitionSpec spec = new PartitionSpec(CONFIG, 0, 1, true, false);
        List<Path> files = List.of(model.resolve("model.safetensors"));
        try (DjlPartitionExecutor auto = DjlPartitionExecutor.load(spec, files, new ExecutorOptions("auto", 0))) {
            int gpus = ai.djl.engine.Engine.getEngine("PyTorch").getGpuCount();
            assertThat(auto.device().isGpu()).isEqualTo(gpus > 0);
        }
        assertThatThrownBy(() -> DjlPartitionExecutor.load(spec, files, new ExecutorOptions("tpu", 0)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tpu");
        assertThatThrownBy(() -> DjlPartitionExecutor.load(spec, files, new ExecutorOptions("gpu:64", 0)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("GPU");
    }
    @Test
    void anIdenticalCopyOfATensorInTwoFilesIsOneTensorButADifferentOneIsRefused() throws Exception {
        ModelConfig tied = ModelFixtures.llamaTied();
        ModelGenerator.Options qkvBias = ModelFixtures.weightsOnly().withAttentionBias(true);
        Path other = ModelFixtures.write(tied, qkvBias, 6, dir.resolve("tied-other"));
        Path tiedShards = ModelFixtures.write(tied, qkvBias.withPerLayerFiles(), 5, dir.resolve("tied-shards"));
        io.butterfly.common.safetensors.SafetensorsWriter.Entry embedding;
        try (var f = io.butterfly.common.safetensors.SafetensorsFile.open(tiedShards.resolve(ModelGenerator.EMBED_FILE))) {
            var t = f.tensors().get("model.embed_tokens.weight");
            embedding = new io.butterfly.common.safetensors.SafetensorsWriter.Entry(t.name(), t.dtype(), t.shape(),
                    f.rawBytes(t.name()));
        }
        // The registry's head shard of a tied model carries a copy of the embedding.
        Path copy = dir.resolve("embedding-copy.safetensors");
        io.butterfly.common.safetensors.SafetensorsWriter.write(copy, List.of(embedding), java.util.Map.of());
        PartitionSpec whole = PartitionSpec.whole(tied);
        List<Path> files = new java.util.ArrayList<>(Pipeline.shardsFor(whole, tiedShards));
        files.add(copy);
        try (DjlPartitionExecutor exec = DjlPartitionExecutor.load(whole, files, ExecutorOptions.cpu())) {
            assertThat(exec.spec()).isEqualTo(whole);
        }
        List<Path> conflicting = new java.util.ArrayList<>(Pipeline.shardsFor(whole, tiedShards));
        conflicting.add(other.resolve("model.safetensors"));
        assertThatThrownBy(() -> DjlPartitionExecutor.load(whole, conflicting, ExecutorOptions.cpu()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is in both");
    }
}
