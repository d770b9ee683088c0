package io.butterfly.common.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** tokenizer_config.json and chat_template.jinja read as transformers reads them. */
class TokenizerConfigTest {

    @TempDir
    Path dir;

    @Test
    void theTemplateIsTheConfigsStringOrItsDefaultNamedOneAndTheFileWins() throws Exception {
        assertThat(TokenizerConfig.read(dir)).isEqualTo(TokenizerConfig.NONE);

        Files.writeString(dir.resolve(TokenizerConfig.FILE), """
                {"bos_token": {"__type": "AddedToken", "content": "<s>"}, "eos_token": "</s>", "pad_token": null,
                 "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}""");
        assertThat(TokenizerConfig.read(dir)).isEqualTo(new TokenizerConfig("D", "<s>", "</s>"));

        Files.writeString(dir.resolve(TokenizerConfig.CHAT_TEMPLATE_FILE), "F\n", StandardCharsets.UTF_8);
        assertThat(TokenizerConfig.read(dir)).isEqualTo(new TokenizerConfig("F\n", "<s>", "</s>"));
        assertThat(TokenizerConfig.read(null, dir.resolve(TokenizerConfig.CHAT_TEMPLATE_FILE)))
                .as("a template file alone: no special tokens").isEqualTo(new TokenizerConfig("F\n", null, null));

        assertThat(TokenizerConfig.parse("{\"chat_template\": [{\"name\": \"rag\", \"template\": \"R\"}]}".getBytes(
                StandardCharsets.UTF_8)).chatTemplate()).as("no default among the named: none").isNull();
    }

    @Test
    void whatTransformersCouldNotReadIsRefusedNamingTheField() {
        for (String[] bad : new String[][]{{"[1]", "not a JSON object"}, {"{\"chat_template\": 3}", "chat_template"},
                {"{\"bos_token\": 1}", "bos_token"}, {"{\"eos_token\": {\"id\": 2}}", "eos_token"}, {"{", "not JSON"}}) {
            assertThatThrownBy(() -> TokenizerConfig.parse(bad[0].getBytes(StandardCharsets.UTF_8))).as(bad[0])
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(TokenizerConfig.FILE)
                    .hasMessageContaining(bad[1]);
        }
    }
}
