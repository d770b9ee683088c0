package io.butterfly.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.WeightQuantization;
import org.junit.jupiter.api.Test;

/** The bytes a decode step reads and the work a prefill does, counted from the model's shapes. */
class RooflineTest {

    /** bench-100m: Llama, 12 layers, hidden 768, 12 heads, intermediate 2048, vocab 32000, untied. */
    private static final ModelConfig BENCH = new ModelConfig(Architecture.LLAMA, 12, 768, 12, 12, 2048, 32000, 2048, 1e-5,
            10000.0, false, 1, 2);

    @Test
    void aDecodeStepReadsEveryMatrixAndTheHeadOnceAndTheCachedKeysAndValues() {
        Roofline f32 = new Roofline(BENCH, 4);
        long matrices = 12L * (768 * 2304 + 768 * 768 + 3 * 768 * 2048) + 32000L * 768;
        long norms = 12L * 2 * 768 + 2 * 768; // two per layer, the final norm and one embedding row
        assertThat(f32.decodeBytes(0)).isEqualTo(4 * (matrices + norms));
        assertThat(f32.decodeBytes(0)).isEqualTo(438_122_496L);
        // 48 cached positions: keys and values of 768 each on 12 layers, float32.
        assertThat(f32.decodeBytes(48) - f32.decodeBytes(0)).isEqualTo(2L * 12 * 768 * 48 * 4);
        // Half-precision weights halve the matrices, not the rest.
        assertThat(new Roofline(BENCH, 2).decodeBytes(48)).isEqualTo(f32.decodeBytes(48) - 2 * matrices);
        assertThat(f32.decodeBound(43.8, 0)).isCloseTo(100.0, within(0.1));
    }

    @Test
    void quantizedMatricesAreReadAsTheirBlocks() {
        long layerValues = 768L * 2304 + 768 * 768 + 3 * 768 * 2048;
        long rest = 4L * (12 * 2 * 768 + 2 * 768);
        // Q8_0: 34 bytes for 32 values, the head too
        assertThat(new Roofline(BENCH, 4, WeightQuantization.Q8).decodeBytes(0))
                .isEqualTo((12 * layerValues + 32000L * 768) / 32 * 34 + rest);
        // Q4_0: 18 bytes for 32 values, the head in Q6_K: 210 bytes for 256
        assertThat(new Roofline(BENCH, 4, WeightQuantization.Q4).decodeBytes(0))
                .isEqualTo(12 * layerValues / 32 * 18 + 32000L * 768 / 256 * 210 + rest);
    }

    @Test
    void groupedQueryAttentionReadsFewerKeyAndValueWeights() {
        ModelConfig gqa = new ModelConfig(Architecture.LLAMA, 2, 64, 4, 2, 128, 100, 64, 1e-5, 10000.0, false, 1, 2);
        long perLayer = 64 * (64 + 2 * 32) + 64 * 64 + 3 * 64 * 128;
        assertThat(new Roofline(gqa, 4).decodeBytes(0)).isEqualTo(4 * (2 * perLayer + 100 * 64 + 2 * 2 * 64 + 2 * 64));
    }

    @Test
    void gpt2CountsItsBiasesLayerNormsAndBothEmbeddingRows() {
        ModelConfig gpt2 = new ModelConfig(Architecture.GPT2, 2, 64, 4, 4, 256, 100, 32, 1e-5, 10000.0, true, 1, 2);
        long matrices = 2L * (4 * 64 * 64 + 2 * 64 * 256) + 100 * 64;
        long vectors = 2L * (4 * 64 + 3 * 64 + 64 + 256 + 64) + 4 * 64;
        assertThat(new Roofline(gpt2, 4).decodeBytes(0)).isEqualTo(4 * (matrices + vectors));
    }

    @Test
    void aPrefillMultipliesEveryTokenByTheLayersAndAttendsCausallyButRunsTheHeadOnce() {
        Roofline r = new Roofline(BENCH, 4);
        double layers = 2.0 * 12 * (768 * 2304 + 768 * 768 + 3 * 768 * 2048);
        double head = 2.0 * 32000 * 768;
        // One token attends to itself: 2 x 768 for its scores and 2 x 768 for its values, per layer.
        assertThat(r.prefillFlops(1)).isEqualTo(layers + 4.0 * 768 * 12 + head);
        // 512 tokens: token t attends to t + 1 keys, 512 * 513 / 2 pairs in all.
        assertThat(r.prefillFlops(512)).isEqualTo(512 * layers + 4.0 * 768 * 12 * (512 * 513 / 2) + head);
        assertThat(r.prefillBound(100, 512)).isCloseTo(100e9 * 512 / r.prefillFlops(512), within(1e-9));
    }
}
