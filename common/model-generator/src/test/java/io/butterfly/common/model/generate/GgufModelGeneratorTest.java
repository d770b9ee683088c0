package io.butterfly.common.model.generate;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.gguf.GgufFile;
import io.butterfly.common.gguf.GgufLlama;
import io.butterfly.common.gguf.GgufTensor;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.quant.GgmlQuants;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.quant.WeightQuantization;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GgufModelGeneratorTest {

    static final ModelConfig SMALL = new ModelConfig(Architecture.LLAMA, 2, 256, 4, 2, 512, 600, 256, 1e-5, 500_000.0,
            false, 1, 2, RopeScaling.llama3(8.0, 1.0, 4.0, 128));

    @TempDir
    Path tmp;

    @Test
    void writesAFileTheGgufReaderReadsAsTheConfigRopeScalingIncluded() throws Exception {
        Path file = tmp.resolve("small-q4.gguf");
        GgufModelGenerator.generate(SMALL, 7, WeightQuantization.Q4, file);
        try (GgufFile gguf = GgufFile.open(file)) {
            // GGUF holds the epsilon as a float32
            assertThat(GgufLlama.config(gguf)).usingRecursiveComparison().ignoringFields("normEps")
                    .isEqualTo(SMALL);
            // Llama 3.1's scaling as llama.cpp writes it: one float32 divisor per rotary frequency.
            assertThat(gguf.tensor("rope_freqs.weight").orElseThrow().type()).isEqualTo(GgmlType.F32);
            assertThat(gguf.tensor("rope_freqs.weight").orElseThrow().numElements()).isEqualTo(SMALL.headDim() / 2);
            assertThat(GgufLlama.config(gguf).normEps()).isEqualTo((double) (float) SMALL.normEps());
            assertThat(gguf.tensors()).hasSize(1 + 2 + 9 * SMALL.numLayers() + 1);
            assertThat(gguf.tensor("blk.1.ffn_down.weight").orElseThrow().type()).isEqualTo(GgmlType.Q4_0);
            assertThat(gguf.tensor("output.weight").orElseThrow().type()).isEqualTo(GgmlType.Q6_K);
            assertThat(gguf.tensor("output_norm.weight").orElseThrow().type()).isEqualTo(GgmlType.F32);
            assertThat(gguf.array("tokenizer.ggml.tokens").orElseThrow()).hasSize(600);
            // The values are the generator's: Gaussian around 0 with the embedding's deviation of 0.5.
            GgufTensor embed = gguf.tensor("token_embd.weight").orElseThrow();
            ByteBuffer bytes = ByteBuffer.allocate((int) embed.bytes());
            gguf.read(embed, 0, bytes);
            float[] values = new float[(int) embed.numElements()];
            GgmlQuants.dequantize(GgmlType.Q4_0, bytes.flip(), values, 0, values.length);
            double sum = 0;
            double squares = 0;
            for (float v : values) {
                sum += v;
                squares += v * v;
            }
            double mean = sum / values.length;
            assertThat(mean).isBetween(-0.02, 0.02);
            assertThat(Math.sqrt(squares / values.length - mean * mean)).isBetween(0.45, 0.55);
        }
    }

    @Test
    void sameSeedSameBytes() throws Exception {
        Path a = tmp.resolve("a").resolve("m.gguf");
        Path b = tmp.resolve("b").resolve("m.gguf"); // the file's name is the model's: the same
        GgufModelGenerator.generate(SMALL, 3, WeightQuantization.Q8, a);
        GgufModelGenerator.generate(SMALL, 3, WeightQuantization.Q8, b);
        assertThat(Files.mismatch(a, b)).isEqualTo(-1);
    }
}
