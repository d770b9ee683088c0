package io.butterfly.common.model.generate;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.quant.WeightQuantization;
import org.junit.jupiter.api.Test;

/** The real models' shapes are the published configs' (nothing is written: these are sizes, not gigabytes). */
class ModelShapesTest {

    @Test
    void llama32OneBillionIsMetasConfig() {
        ModelConfig c = ModelShapes.named("llama-3.2-1b").orElseThrow();
        assertThat(c.numLayers()).isEqualTo(16);
        assertThat(c.hiddenSize()).isEqualTo(2048);
        assertThat(c.numHeads()).isEqualTo(32);
        assertThat(c.numKvHeads()).isEqualTo(8);
        assertThat(c.headDim()).isEqualTo(64);
        assertThat(c.intermediateSize()).isEqualTo(8192);
        assertThat(c.vocabSize()).isEqualTo(128_256);
        assertThat(c.tieWordEmbeddings()).isTrue();
        assertThat(c.ropeTheta()).isEqualTo(500_000.0);
        assertThat(c.ropeScaling()).isEqualTo(RopeScaling.llama3(32.0, 1.0, 4.0, 8192));
        // Hugging Face's count for meta-llama/Llama-3.2-1B
        assertThat(c.parameterCount()).isEqualTo(1_235_814_400L);
    }

    @Test
    void llama31EightBillionIsMetasConfig() {
        ModelConfig c = ModelShapes.named("llama-3.1-8b").orElseThrow();
        assertThat(c.numLayers()).isEqualTo(32);
        assertThat(c.hiddenSize()).isEqualTo(4096);
        assertThat(c.numHeads()).isEqualTo(32);
        assertThat(c.numKvHeads()).isEqualTo(8);
        assertThat(c.headDim()).isEqualTo(128);
        assertThat(c.intermediateSize()).isEqualTo(14336);
        assertThat(c.vocabSize()).isEqualTo(128_256);
        assertThat(c.tieWordEmbeddings()).isFalse();
        assertThat(c.ropeScaling()).isEqualTo(RopeScaling.llama3(8.0, 1.0, 4.0, 8192));
        // Hugging Face's count for meta-llama/Llama-3.1-8B
        assertThat(c.parameterCount()).isEqualTo(8_030_261_248L);
    }

    @Test
    void eightBillionInFourBitsIsAboutFourAndAHalfGigabytes() {
        ModelConfig c = ModelShapes.LLAMA_3_1_8B;
        long values = 0;
        long bytes = 0;
        for (GgufModelGenerator.Tensor t : GgufModelGenerator.tensors(c)) {
            values += t.rows() * t.cols();
            GgmlType type = t.rows() == 1 ? GgmlType.F32
                    : WeightQuantization.Q4.typeOf(t.hfName(), new long[]{t.rows(), t.cols()}, c).orElseThrow();
            bytes += type.rowBytes(t.cols()) * t.rows();
            if (t.hfName().equals("lm_head.weight")) {
                assertThat(type).isEqualTo(GgmlType.Q6_K);
            } else if (t.rows() > 1) {
                assertThat(type).as(t.hfName()).isEqualTo(GgmlType.Q4_0);
            }
        }
        assertThat(values).isEqualTo(c.parameterCount());
        // the file holds these bytes plus its metadata (the vocabulary) and alignment: 4,657,961,536 when written
        assertThat(bytes).isEqualTo(4_653_375_488L);
    }

    @Test
    void unknownShapeIsNone() {
        assertThat(ModelShapes.named("llama-70b")).isEmpty();
        assertThat(ModelShapes.names()).containsExactly("llama-3.2-1b", "llama-3.1-8b");
    }
}
