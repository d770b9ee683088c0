package io.butterfly.common.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/** What a Llama-family config.json may ask for that plain RoPE over full attention cannot give. */
class ModelConfigTest {

    private static final String LLAMA = """
            {"model_type": "%s", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 32768%s}
            """;

    private static ModelConfig parse(String type, String extra) {
        return ModelConfig.parse(String.format(LLAMA, type, extra).getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void llama3AndLinearRopeScalingAreReadAndWrittenBack() {
        ModelConfig llama31 = parse("llama", ", \"rope_theta\": 500000.0, \"rope_scaling\": {\"rope_type\": \"llama3\","
                + " \"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0,"
                + " \"original_max_position_embeddings\": 8192}");
        assertThat(llama31.ropeScaling()).isEqualTo(RopeScaling.llama3(8.0, 1.0, 4.0, 8192));
        assertThat(llama31.ropeTheta()).isEqualTo(500000.0);
        assertThat(parse("llama", ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}").ropeScaling())
                .isEqualTo(RopeScaling.linear(2.0));
        assertThat(parse("llama", ", \"rope_scaling\": null").ropeScaling()).isNull();
        assertThat(parse("llama", ", \"rope_scaling\": {\"rope_type\": \"default\"}").ropeScaling()).isNull();
        // transformers 5: rope_parameters, with the theta inside
        ModelConfig v5 = parse("llama", ", \"rope_parameters\": {\"rope_type\": \"linear\", \"factor\": 4.0,"
                + " \"rope_theta\": 1000.0}");
        assertThat(v5.ropeScaling()).isEqualTo(RopeScaling.linear(4.0));
        assertThat(v5.ropeTheta()).isEqualTo(1000.0);

        ModelConfig back = ModelConfig.parse(tools.jackson.databind.json.JsonMapper.builder().build()
                .writeValueAsBytes(llama31.toHuggingFace()));
        assertThat(back).isEqualTo(llama31);
    }

    @Test
    void mixtureOfExpertsAndQwen3ConfigsAreReadAndWrittenBack() {
        ModelConfig mixtral = parse("mixtral", ", \"num_local_experts\": 8, \"num_experts_per_tok\": 2");
        assertThat(mixtral.experts()).isEqualTo(new MixtureOfExperts(MixtureOfExperts.Kind.MIXTRAL, 8, 2, 128, 0, true, 1,
                List.of()));
        assertThat(mixtral.qkNorm()).isFalse();
        ModelConfig qwen2 = parse("qwen2_moe", ", \"num_experts\": 60, \"num_experts_per_tok\": 4,"
                + " \"moe_intermediate_size\": 32, \"shared_expert_intermediate_size\": 96, \"decoder_sparse_step\": 2,"
                + " \"mlp_only_layers\": [0], \"norm_topk_prob\": false");
        assertThat(qwen2.experts()).isEqualTo(new MixtureOfExperts(MixtureOfExperts.Kind.QWEN2_MOE, 60, 4, 32, 96, false, 2,
                List.of(0)));
        assertThat(qwen2.experts().sparse(0)).isFalse(); // mlp_only_layers
        assertThat(qwen2.experts().sparse(1)).isTrue();
        assertThat(qwen2.experts().sparse(2)).isFalse(); // (2 + 1) % 2 != 0
        ModelConfig qwen3 = parse("qwen3", "");
        assertThat(qwen3.qkNorm()).isTrue();
        assertThat(qwen3.experts()).isNull();
        ModelConfig qwen3Moe = parse("qwen3_moe", ", \"num_experts\": 128, \"num_experts_per_tok\": 8,"
                + " \"moe_intermediate_size\": 16, \"norm_topk_prob\": true");
        assertThat(qwen3Moe.qkNorm()).isTrue();
        assertThat(qwen3Moe.experts()).isEqualTo(new MixtureOfExperts(MixtureOfExperts.Kind.QWEN3_MOE, 128, 8, 16, 0, true,
                1, List.of()));
        for (ModelConfig c : List.of(mixtral, qwen2, qwen3, qwen3Moe)) {
            ModelConfig back = ModelConfig.parse(tools.jackson.databind.json.JsonMapper.builder().build()
                    .writeValueAsBytes(c.toHuggingFace()));
            assertThat(back).isEqualTo(c);
        }
        assertThat(qwen3Moe.toHuggingFace()).containsEntry("architectures", List.of("Qwen3MoeForCausalLM"));
        // per layer: attention 4*64*64 - 2*64*32 (kv) + norms + q/k norms 2*16; experts 128 * (64 + 3*64*16)
        assertThat(qwen3Moe.parameterCount() - ModelConfig.parse(String.format(LLAMA, "llama", "").getBytes(
                StandardCharsets.UTF_8)).parameterCount()).isEqualTo(2 * (2 * 16 + 128 * (64 + 3 * 64 * 16) - 3 * 64 * 128));
    }

    @Test
    void mixturesOfExpertsOutOfRangeAndOtherFamiliesAreRefusedByName() {
        assertThatThrownBy(() -> parse("mixtral", ", \"num_local_experts\": 2, \"num_experts_per_tok\": 3"))
                .hasMessageContaining("experts per token");
        assertThatThrownBy(() -> parse("qwen2_moe", ", \"num_experts\": 0")).hasMessageContaining("num_experts 0");
        assertThatThrownBy(() -> parse("qwen2_moe", ", \"shared_expert_intermediate_size\": 0"))
                .hasMessageContaining("shared expert");
        assertThatThrownBy(() -> parse("qwen3_moe", ", \"num_experts_per_tok\": \"two\""))
                .hasMessageContaining("num_experts_per_tok");
        assertThatThrownBy(() -> parse("qwen3_moe", ", \"mlp_only_layers\": 3")).hasMessageContaining("mlp_only_layers");
        for (String other : List.of("deepseek_v3", "gpt_oss", "dbrx")) {
            assertThatThrownBy(() -> parse(other, "")).hasMessageContaining("unsupported model_type '" + other + "'");
        }
    }

    @Test
    void everyListedEndOfSequenceTokenEndsASequence() {
        // Llama 3.1 Instruct: <|end_of_text|>, <|eom_id|>, <|eot_id|>.
        ModelConfig instruct = parse("llama", ", \"eos_token_id\": [90, 91, 92], \"bos_token_id\": 1");
        assertThat(instruct.eosTokenId()).isEqualTo(90);
        assertThat(instruct.moreEosTokenIds()).containsExactly(91, 92);
        assertThat(LongStream.of(90, 91, 92).allMatch(instruct::endsSequence)).isTrue();
        assertThat(LongStream.of(1, 89, 93, -1).noneMatch(instruct::endsSequence)).isTrue();
        ModelConfig back = ModelConfig.parse(tools.jackson.databind.json.JsonMapper.builder().build()
                .writeValueAsBytes(instruct.toHuggingFace()));
        assertThat(back).isEqualTo(instruct);

        ModelConfig one = parse("llama", ", \"eos_token_id\": 2");
        assertThat(one.moreEosTokenIds()).isEmpty();
        assertThat(one.endsSequence(2)).isTrue();
        assertThat(one.endsSequence(3)).isFalse();
        assertThat(parse("llama", ", \"eos_token_id\": []").eosTokenId()).isEqualTo(-1);
        assertThat(parse("llama", ", \"eos_token_id\": null").endsSequence(-1)).isFalse();
        assertThatThrownBy(() -> new ModelConfig(Architecture.LLAMA, 1, 8, 2, 2, 8, 10, 8, 1e-5, 1e4, false, 1, -1, null,
                List.of(3))).hasMessageContaining("need a first");
        assertThatThrownBy(() -> new ModelConfig(Architecture.LLAMA, 1, 8, 2, 2, 8, 10, 8, 1e-5, 1e4, false, 1, 2, null,
                List.of(-3))).hasMessageContaining("must not be negative");
    }

    @Test
    void mathTheStagesDoNotComputeIsRefusedByName() {
        // Mistral NeMo: 5120 wide, 32 heads of 128 (not 160).
        assertThatThrownBy(() -> parse("mistral", ", \"head_dim\": 128")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("head_dim 128").hasMessageContaining("16");
        assertThat(parse("llama", ", \"head_dim\": 16").headDim()).isEqualTo(16); // Llama 3 writes it out
        assertThat(parse("qwen2", ", \"head_dim\": null").headDim()).isEqualTo(16);
        assertThatThrownBy(() -> parse("llama", ", \"hidden_act\": \"gelu\"")).hasMessageContaining("hidden_act 'gelu'");
        assertThat(parse("llama", ", \"hidden_act\": \"silu\"").architecture()).isEqualTo(Architecture.LLAMA);
        assertThat(parse("llama", ", \"hidden_act\": \"swish\"").architecture()).isEqualTo(Architecture.LLAMA);

        String gpt2 = "{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4, \"vocab_size\": 100%s}";
        java.util.function.Function<String, ModelConfig> gpt = extra ->
                ModelConfig.parse(String.format(gpt2, extra).getBytes(StandardCharsets.UTF_8));
        assertThat(gpt.apply(", \"activation_function\": \"gelu_new\"").architecture()).isEqualTo(Architecture.GPT2);
        assertThat(gpt.apply(", \"activation_function\": \"gelu_pytorch_tanh\"").architecture()).isEqualTo(Architecture.GPT2);
        assertThat(gpt.apply(", \"activation_function\": \"gelu_fast\"").architecture()).isEqualTo(Architecture.GPT2);
        assertThatThrownBy(() -> gpt.apply(", \"activation_function\": \"gelu\"")).hasMessageContaining("activation_function 'gelu'");
        assertThatThrownBy(() -> gpt.apply(", \"scale_attn_by_inverse_layer_idx\": true"))
                .hasMessageContaining("scale_attn_by_inverse_layer_idx");
        assertThatThrownBy(() -> gpt.apply(", \"scale_attn_weights\": false")).hasMessageContaining("scale_attn_weights");
    }

    /** Read as written (fuzzing found Jackson's own exceptions escaping, and 0 or infinity read for nonsense). */
    @Test
    void aFieldOfAnotherJsonTypeOrOutOfRangeIsRefusedByName() {
        assertThatThrownBy(() -> parse("llama", ", \"rms_norm_eps\": \"1e-5\"")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rms_norm_eps");
        assertThatThrownBy(() -> parse("llama", ", \"vocab_size\": 2.5")).hasMessageContaining("vocab_size");
        assertThatThrownBy(() -> parse("llama", ", \"head_dim\": 4294967312")).hasMessageContaining("head_dim");
        assertThatThrownBy(() -> parse("llama", ", \"tie_word_embeddings\": 1")).hasMessageContaining("tie_word_embeddings");
        assertThatThrownBy(() -> parse("llama", ", \"eos_token_id\": [2, \"3\"]")).hasMessageContaining("eos_token_id[1]");
        assertThatThrownBy(() -> parse("llama", ", \"rope_scaling\": [2]")).hasMessageContaining("rope_scaling");
        assertThatThrownBy(() -> parse("llama", ", \"rope_theta\": 1e999")).hasMessageContaining("rope_theta");
        assertThatThrownBy(() -> parse("llama", ", \"max_position_embeddings\": 0")).hasMessageContaining("positions");
        assertThatThrownBy(() -> ModelConfig.parse("{\"model_type\": ".getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("config.json is not JSON");
        assertThatThrownBy(() -> ModelConfig.parse("[1]".getBytes(StandardCharsets.UTF_8)))
                .hasMessage("config.json is not a JSON object");
    }

    @Test
    void scalingThatDependsOnTheSequenceOrScalesAttentionIsRefusedRatherThanRunAsPlainRope() {
        for (String type : new String[] {"dynamic", "yarn", "longrope"}) {
            assertThatThrownBy(() -> parse("llama", ", \"rope_scaling\": {\"rope_type\": \"" + type + "\", \"factor\": 2.0}"))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rope_scaling")
                    .hasMessageContaining(type);
        }
        assertThatThrownBy(() -> parse("llama", ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}"))
                .hasMessageContaining("low_freq_factor");
        assertThatThrownBy(() -> parse("llama", ", \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 0}"))
                .hasMessageContaining("factor must be a positive number");
    }

    /**
     * Llama 3.1's published scaling (theta 5*10^5, factor 8, bands 1 and 4 over 8192) on head dim 128, against
     * the same rule evaluated per frequency in double: every frequency is kept, divided or blended as its
     * wavelength says, within float32 rounding.
     */
    @Test
    void llama3ScalingKeepsShortWavelengthsDividesLongOnesAndBlendsBetween() {
        RopeScaling s = RopeScaling.llama3(8.0, 1.0, 4.0, 8192);
        float[] plain = new float[64];
        for (int j = 0; j < plain.length; j++) {
            plain[j] = (float) Math.pow(500000.0, -2.0 * j / 128);
        }
        float[] scaled = s.apply(plain);
        int kept = 0;
        int divided = 0;
        int blended = 0;
        for (int j = 0; j < plain.length; j++) {
            double wavelength = 2 * Math.PI / plain[j];
            double expected;
            if (wavelength < 2048) {
                expected = plain[j];
                kept++;
            } else if (wavelength > 8192) {
                expected = plain[j] / 8.0;
                divided++;
            } else {
                double smooth = (8192 / wavelength - 1) / 3;
                expected = (1 - smooth) * plain[j] / 8 + smooth * plain[j];
                blended++;
            }
            assertThat((double) scaled[j]).as("frequency " + j).isCloseTo(expected, org.assertj.core.data.Percentage.withPercentage(1e-4));
        }
        assertThat(kept).isPositive();
        assertThat(divided).isPositive();
        assertThat(blended).isPositive();
        assertThat(RopeScaling.linear(4.0).apply(new float[] {1f, 0.5f})).containsExactly(0.25f, 0.125f);
    }

    @Test
    void aSlidingWindowCapsThePositionsWhereFullAttentionIsExact() {
        assertThat(parse("mistral", ", \"sliding_window\": 4096").maxPositions()).isEqualTo(4096);
        assertThat(parse("mistral", ", \"sliding_window\": null").maxPositions()).isEqualTo(32768);
        // Qwen2 names a window it does not use.
        assertThat(parse("qwen2", ", \"sliding_window\": 4096, \"use_sliding_window\": false").maxPositions()).isEqualTo(32768);
        assertThat(parse("llama", "").maxPositions()).isEqualTo(32768);
    }
}
