package io.butterfly.common.model;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.util.List;
import tools.jackson.databind.json.JsonMapper;
import org.junit.jupiter.api.Timeout;

/**
 * {@code config.json} and {@code generation_config.json} as a model directory may hold them (docs/testing.md,
 * fuzzing): any bytes read as a configuration the stages can compute, or are refused with an
 * {@link IllegalArgumentException} that says why, nothing else. A configuration read keeps its invariants and reads
 * back the same from the {@code config.json} it writes.
 */
// Per input: a slow one is a finding too (Jazzer passes it on as libFuzzer's -timeout).
@Timeout(10)
class ModelConfigFuzzTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @FuzzTest(maxDuration = "30s")
    void anyConfigJsonReadsOrIsRefused(byte[] json) {
        ModelConfig config;
        try {
            config = ModelConfig.parse(json);
        } catch (IllegalArgumentException refused) {
            assertThat(refused.getMessage()).isNotBlank();
            return;
        }
        assertThat(config.numLayers()).isPositive();
        assertThat(config.headDim() * config.numHeads()).isEqualTo(config.hiddenSize());
        assertThat(config.numHeads() % config.numKvHeads()).isZero();
        assertThat(config.intermediateSize()).isPositive();
        assertThat(config.vocabSize()).isPositive();
        assertThat(config.maxPositions()).isPositive();
        assertThat(config.normEps()).isPositive().isFinite();
        if (config.architecture() == Architecture.LLAMA) {
            assertThat(config.ropeTheta()).isPositive().isFinite();
        }
        config.parameterCount(); // defined for any config read

        assertThat(ModelConfig.parse(JSON.writeValueAsBytes(config.toHuggingFace()))).isEqualTo(config);
    }

    @FuzzTest(maxDuration = "30s")
    void anyGenerationConfigReadsOrIsRefused(byte[] json) {
        List<Integer> eos;
        try {
            eos = GenerationConfig.eosTokenIds(json);
        } catch (IllegalArgumentException refused) {
            assertThat(refused.getMessage()).startsWith(GenerationConfig.FILE);
            return;
        }
        assertThat(eos).allSatisfy(id -> assertThat(id).isNotNegative());
    }
}
