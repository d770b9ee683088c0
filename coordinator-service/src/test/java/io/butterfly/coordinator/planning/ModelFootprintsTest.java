package io.butterfly.coordinator.planning;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The memory estimate from a manifest: shards at the precision the workers hold them plus a KV cache per layer, kept
 * apart from the weights.
 */
class ModelFootprintsTest {

    // 2 layers, kv dim 2 heads x 8 = 16.
    private static final ModelConfig CONFIG = new ModelConfig(Architecture.LLAMA, 2, 32, 4, 2, 64, 100, 128, 1e-5,
            10000.0, false, 1, 2);

    @Test
    void layersHoldTheirShardAndAKvCacheThatIsNotCountedAsWeights() {
        Manifest manifest = new Manifest("m", "llama", "1", 2, 0, 16, 64, "BF16", List.of(
                file("embed.safetensors", FileKind.EMBEDDING, 1_000, null, null),
                file("layer-00000.safetensors", FileKind.LAYER, 300, 0, 1),
                file("layer-00001.safetensors", FileKind.LAYER, 400, 1, 2),
                file("head.safetensors", FileKind.HEAD, 1_100, null, null)), "", 0, null, null);
        ModelFootprint f = ModelFootprints.of(manifest, CONFIG,
                new ModelFootprints.Settings(10, 3, 7), 4);

        long kv = 2L * 16 * 10 * 3 * Float.BYTES; // keys and values, kv dim, tokens, sequences, float32
        assertEquals(kv, f.kvBytesPerLayer());
        // BF16 shards are held as float32: twice their size.
        assertEquals(600, f.layerWeightBytes(0));
        assertEquals(800, f.layerWeightBytes(1));
        assertEquals(600 + kv, f.layerBytes()[0]);
        assertEquals(2_000, f.embeddingBytes());
        assertEquals(2_200, f.headBytes());
        assertEquals(7, f.stageOverheadBytes());
    }

    /**
     * Without a token count, a sequence's KV cache is counted for the model's positions, but never past the workers'
     * KV budget: Llama 3.1 8B (131,072 positions, 32 layers of 8 x 128 key/value dims) would otherwise plan 32 GiB a
     * sequence, 1 GiB a layer, where each worker refuses caches past its 2 GB.
     */
    @Test
    void theKvCacheOfAModelsFullContextIsCountedNoFurtherThanTheWorkersBudget() {
        ModelConfig llama8b = new ModelConfig(Architecture.LLAMA, 32, 4096, 32, 8, 14336, 128_256, 131_072, 1e-5,
                500_000.0, false, 1, 2);
        Manifest manifest = new Manifest("m", "llama", "1", 32, 0, 16, 64, "Q4_0", List.of(
                file("layer-00000.safetensors", FileKind.LAYER, 100, 0, 32)), "", 0, null, null);
        long budget = 2L << 30;
        ModelFootprint capped = ModelFootprints.of(manifest, llama8b, new ModelFootprints.Settings(0, 1, 0, budget), 4);
        assertEquals(budget / 32, capped.kvBytesPerLayer()); // 8192 positions: 64 MiB a layer
        ModelFootprint uncapped = ModelFootprints.of(manifest, llama8b, new ModelFootprints.Settings(0, 1, 0), 4);
        assertEquals(2L * 1024 * 131_072 * Float.BYTES, uncapped.kvBytesPerLayer());
        // a model whose whole context fits the budget is counted for all of it
        ModelFootprint small = ModelFootprints.of(manifest, CONFIG, new ModelFootprints.Settings(0, 1, 0, budget), 4);
        assertEquals(2L * 16 * 128 * Float.BYTES, small.kvBytesPerLayer());
        // an explicit token count is taken as given
        ModelFootprint explicit = ModelFootprints.of(manifest, llama8b, new ModelFootprints.Settings(65_536, 1, 0, budget), 4);
        assertEquals(2L * 1024 * 65_536 * Float.BYTES, explicit.kvBytesPerLayer());
    }

    @Test
    void workersHoldingHalfPrecisionWeightsNeedTheLayersAndHeadAtTwoBytesButTheEmbeddingInFloat32() {
        Manifest f32 = new Manifest("m", "llama", "1", 2, 0, 16, 64, "F32", List.of(
                file("embed.safetensors", FileKind.EMBEDDING, 1_000, null, null),
                file("layer-00000.safetensors", FileKind.LAYER, 600, 0, 2),
                file("head.safetensors", FileKind.HEAD, 1_200, null, null)), "", 0, null, null);
        ModelFootprints.Settings settings = new ModelFootprints.Settings(10, 3, 7);
        ModelFootprint asStored = ModelFootprints.of(f32, CONFIG, settings, 4);
        ModelFootprint half = ModelFootprints.of(f32, CONFIG, settings, 2);
        assertEquals(300, asStored.layerWeightBytes(0));
        assertEquals(150, half.layerWeightBytes(0));
        assertEquals(150, half.layerWeightBytes(1));
        assertEquals(600, half.headBytes());
        assertEquals(1_000, half.embeddingBytes());
        assertEquals(asStored.kvBytesPerLayer(), half.kvBytesPerLayer());
        // A BF16 checkpoint held in BF16: its file sizes.
        Manifest bf16 = new Manifest("m", "llama", "1", 2, 0, 16, 64, "BF16", f32.files(), "", 0, null, null);
        assertEquals(300, ModelFootprints.of(bf16, CONFIG, settings, 2).layerWeightBytes(0));
        assertEquals(2_000, ModelFootprints.of(bf16, CONFIG, settings, 2).embeddingBytes());
    }

    @Test
    void aQuantizedModelIsHeldAsItsShardsStoreItWhateverTheWorkersFloatPrecision() {
        Manifest q4 = new Manifest("m", "llama", "1", 2, 0, 16, 64, "Q4_0", List.of(
                file("embed.safetensors", FileKind.EMBEDDING, 1_000, null, null),
                file("layer-00000.safetensors", FileKind.LAYER, 300, 0, 1),
                file("layer-00001.safetensors", FileKind.LAYER, 400, 1, 2),
                file("head.safetensors", FileKind.HEAD, 1_100, null, null)), "", 0, null, null);
        for (int weightBytes : new int[]{4, 2}) {
            ModelFootprint f = ModelFootprints.of(q4, CONFIG, new ModelFootprints.Settings(10, 3, 7), weightBytes);
            assertEquals(300, f.layerWeightBytes(0));
            assertEquals(400, f.layerWeightBytes(1));
            assertEquals(1_000, f.embeddingBytes());
            assertEquals(1_100, f.headBytes());
            assertEquals(2L * 16 * 10 * 3 * Float.BYTES, f.kvBytesPerLayer()); // the KV cache stays float32
        }
    }

    private static ManifestFile file(String name, FileKind kind, long size, Integer start, Integer end) {
        return new ManifestFile(name, size, "sha256", "", kind, start, end, "safetensors");
    }
}
