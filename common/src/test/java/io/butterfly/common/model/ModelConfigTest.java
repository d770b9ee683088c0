package io.butterfly.common.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
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
    void ropeScalingIsRefusedRatherThanRunWithPlainRope() {
        assertThatThrownBy(() -> parse("llama", ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rope_scaling")
                .hasMessageContaining("llama3");
        assertThatThrownBy(() -> parse("llama", ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}"))
                .hasMessageContaining("linear");
        assertThat(parse("llama", ", \"rope_scaling\": null").maxPositions()).isEqualTo(32768);
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
