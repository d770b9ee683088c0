package io.butterfly.coordinator.jinja;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.butterfly.common.model.TokenizerConfig;
import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.model.ChatTemplateException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Timeout;

/**
 * A model directory's {@code tokenizer_config.json}, its chat template included (docs/testing.md, fuzzing): any bytes
 * are read as a configuration or refused with an {@link IllegalArgumentException} naming the file; a template read
 * renders a conversation in the sandbox, within its output bound, or fails as a {@link ChatTemplateException}; nothing
 * else escapes (no Java method reached, no include, no stack or heap exhausted).
 */
// Per input: a slow one is a finding too (Jazzer passes it on as libFuzzer's -timeout).
@Timeout(10)
class TokenizerConfigFuzzTest {

    private static final JinjavaChatTemplates TEMPLATES = new JinjavaChatTemplates(Clock.systemUTC(), Duration.ofSeconds(2));
    private static final List<ChatTemplate.Message> CONVERSATION = List.of(new ChatTemplate.Message("system", "Be brief."),
            new ChatTemplate.Message("user", "Hello!"), new ChatTemplate.Message("assistant", "Hi."),
            new ChatTemplate.Message("user", "Why?", "ann"));

    @FuzzTest(maxDuration = "30s")
    void anyTokenizerConfigRendersOrIsRefused(byte[] json) {
        TokenizerConfig config;
        try {
            config = TokenizerConfig.parse(json);
        } catch (IllegalArgumentException refused) {
            assertThat(refused.getMessage()).startsWith(TokenizerConfig.FILE);
            return;
        }
        if (config.chatTemplate() == null) {
            return;
        }
        String prompt;
        try {
            prompt = TEMPLATES.compile(config.chatTemplate(), config.bosToken(), config.eosToken()).render(CONVERSATION);
        } catch (ChatTemplateException failed) {
            assertThat(failed.getMessage()).isNotBlank();
            return;
        }
        assertThat((long) prompt.length()).isLessThanOrEqualTo(JinjavaChatTemplates.MAX_OUTPUT);
    }
}
