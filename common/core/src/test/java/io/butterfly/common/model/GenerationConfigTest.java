package io.butterfly.common.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GenerationConfigTest {

    /** config.json's own end of sequence: token 2 alone. */
    private static final ModelConfig CONFIG = new ModelConfig(Architecture.LLAMA, 2, 8, 2, 1, 16, 300, 32, 1e-5,
            10000.0, false, 1, 2);

    @TempDir
    Path dir;

    @Test
    void itsEosTokenIdsReplaceTheModelConfigs() throws Exception {
        // Qwen2.5-Instruct's pair: config.json names one, generation_config.json both.
        ModelConfig served = apply("{\"bos_token_id\": 1, \"eos_token_id\": [7, 9], \"temperature\": 0.7}");
        assertThat(served.eosTokenId()).isEqualTo(7);
        assertThat(served.moreEosTokenIds()).containsExactly(9);
        assertThat(served.endsSequence(7)).isTrue();
        assertThat(served.endsSequence(9)).isTrue();
        assertThat(served.endsSequence(2)).isFalse();
        assertThat(served.withEndOfSequence(List.of(2))).isEqualTo(CONFIG);

        assertThat(apply("{\"eos_token_id\": 4}").endsSequence(4)).isTrue();
    }

    @Test
    void withoutTheFileOrAnEosTokenIdTheModelConfigsStands() throws Exception {
        assertThat(GenerationConfig.applyTo(CONFIG, dir.resolve(GenerationConfig.FILE))).isEqualTo(CONFIG);
        assertThat(apply("{\"max_new_tokens\": 20}")).isEqualTo(CONFIG);
        assertThat(apply("{\"eos_token_id\": null}")).isEqualTo(CONFIG);
        assertThat(apply("{\"eos_token_id\": []}")).isEqualTo(CONFIG);
    }

    @Test
    void whatIsNoTokenIdIsRefusedNamingTheFileAndField() {
        for (String bad : List.of("{\"eos_token_id\": \"</s>\"}", "{\"eos_token_id\": -1}", "{\"eos_token_id\": 1.5}",
                "{\"eos_token_id\": [2, \"x\"]}", "{\"eos_token_id\": 4294967296}", "{\"eos_token_id\": {\"id\": 2}}")) {
            assertThatThrownBy(() -> GenerationConfig.eosTokenIds(bad.getBytes(StandardCharsets.UTF_8))).as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(GenerationConfig.FILE).hasMessageContaining("eos_token_id");
        }
        for (String bad : List.of("[2]", "{\"eos_token_id\": ", "")) {
            assertThatThrownBy(() -> GenerationConfig.eosTokenIds(bad.getBytes(StandardCharsets.UTF_8))).as(bad)
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(GenerationConfig.FILE);
        }
    }

    @Test
    void anIdOutsideTheVocabularyIsRefused() {
        assertThatThrownBy(() -> apply("{\"eos_token_id\": [2, 300]}"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("eos_token_id 300").hasMessageContaining("300 tokens");
        assertThat(catchThrowable(() -> apply("{\"eos_token_id\": 299}"))).isNull();
    }

    private ModelConfig apply(String json) throws Exception {
        Path file = dir.resolve(GenerationConfig.FILE);
        Files.writeString(file, json);
        return GenerationConfig.applyTo(CONFIG, file);
    }
}
