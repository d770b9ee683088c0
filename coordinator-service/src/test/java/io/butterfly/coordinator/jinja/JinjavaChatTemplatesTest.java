package io.butterfly.coordinator.jinja;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.model.ChatTemplate.Message;
import io.butterfly.coordinator.model.ChatTemplateException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The chat templates of the model families Butterfly loads (test resources chat-templates/, SOURCES.md says where
 * each came from), rendered as transformers' {@code apply_chat_template(add_generation_prompt=True)} renders them.
 * Each expected text is written from the template's documented format, not produced by this renderer. Then what a
 * hostile template cannot do.
 */
class JinjavaChatTemplatesTest {

    /** 5 September 2024, for templates that print today's date ({@code strftime_now}). */
    private static final Clock CLOCK = Clock.fixed(Instant.parse("2024-09-05T10:00:00Z"), ZoneOffset.UTC);
    private static final JinjavaChatTemplates TEMPLATES = new JinjavaChatTemplates(CLOCK);

    private static final List<Message> SYSTEM_AND_USER = List.of(
            new Message("system", "You are a helpful assistant."), new Message("user", "Hello!"));
    private static final List<Message> THREE_TURNS = List.of(new Message("user", "Hi"),
            new Message("assistant", "Hello! How can I help?"), new Message("user", "What is 2+2?"));

    @Test
    void qwen25IsChatMlWithQwensDefaultSystemMessage() {
        ChatTemplate t = fixture("qwen2.5-7b-instruct.jinja", null, "<|im_end|>");
        assertThat(t.render(SYSTEM_AND_USER)).isEqualTo("""
                <|im_start|>system
                You are a helpful assistant.<|im_end|>
                <|im_start|>user
                Hello!<|im_end|>
                <|im_start|>assistant
                """);
        assertThat(t.render(THREE_TURNS)).isEqualTo("""
                <|im_start|>system
                You are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>
                <|im_start|>user
                Hi<|im_end|>
                <|im_start|>assistant
                Hello! How can I help?<|im_end|>
                <|im_start|>user
                What is 2+2?<|im_end|>
                <|im_start|>assistant
                """);
    }

    /** Llama 3.x: BOS, a system header with the knowledge cut-off and today's date, then a header per turn. */
    @Test
    void llama32WritesBosHeadersAndTodaysDate() {
        ChatTemplate t = fixture("llama-3.2-3b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>");
        assertThat(t.render(SYSTEM_AND_USER)).isEqualTo("<|begin_of_text|><|start_header_id|>system<|end_header_id|>"
                + "\n\nCutting Knowledge Date: December 2023\nToday Date: 05 Sep 2024\n\nYou are a helpful assistant."
                + "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\n");
        assertThat(t.render(THREE_TURNS)).isEqualTo("<|begin_of_text|><|start_header_id|>system<|end_header_id|>"
                + "\n\nCutting Knowledge Date: December 2023\nToday Date: 05 Sep 2024\n\n<|eot_id|>"
                + "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\nHello! How can I help?<|eot_id|>"
                + "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\n");
    }

    /** Gemma 2: the assistant is "model", content is trimmed, and there is no system role. */
    @Test
    void gemma2TakesUserAndModelTurnsOnly() {
        ChatTemplate t = fixture("gemma-2-2b-it.jinja", "<bos>", "<eos>");
        assertThat(t.render(List.of(new Message("user", "  Hi  "), new Message("assistant", "Hello! How can I help?"),
                new Message("user", "What is 2+2?")))).isEqualTo("""
                <bos><start_of_turn>user
                Hi<end_of_turn>
                <start_of_turn>model
                Hello! How can I help?<end_of_turn>
                <start_of_turn>user
                What is 2+2?<end_of_turn>
                <start_of_turn>model
                """);
        assertThatThrownBy(() -> t.render(SYSTEM_AND_USER)).isInstanceOf(ChatTemplateException.class)
                .hasMessage("System role not supported").matches(e -> ((ChatTemplateException) e).refused());
        assertThatThrownBy(() -> t.render(List.of(new Message("user", "a"), new Message("user", "b"))))
                .hasMessage("Conversation roles must alternate user/assistant/user/assistant/...");
    }

    /** Gemma 3: as Gemma 2, with a system message put before the first user turn's text. */
    @Test
    void gemma3PutsTheSystemMessageInTheFirstUserTurn() {
        ChatTemplate t = fixture("gemma-3-it.jinja", "<bos>", "<eos>");
        assertThat(t.render(SYSTEM_AND_USER)).isEqualTo("""
                <bos><start_of_turn>user
                You are a helpful assistant.

                Hello!<end_of_turn>
                <start_of_turn>model
                """);
        assertThat(t.render(THREE_TURNS)).isEqualTo("""
                <bos><start_of_turn>user
                Hi<end_of_turn>
                <start_of_turn>model
                Hello! How can I help?<end_of_turn>
                <start_of_turn>user
                What is 2+2?<end_of_turn>
                <start_of_turn>model
                """);
    }

    @Test
    void phi3TagsEachTurnAndEndsItWithEnd() {
        ChatTemplate t = fixture("phi-3-mini-4k-instruct.jinja", "<s>", "<|endoftext|>");
        assertThat(t.render(SYSTEM_AND_USER)).isEqualTo("""
                <|system|>
                You are a helpful assistant.<|end|>
                <|user|>
                Hello!<|end|>
                <|assistant|>
                """);
        assertThat(t.render(THREE_TURNS)).isEqualTo("""
                <|user|>
                Hi<|end|>
                <|assistant|>
                Hello! How can I help?<|end|>
                <|user|>
                What is 2+2?<|end|>
                <|assistant|>
                """);
    }

    /** Mistral v1: [INST] blocks, the answer closed by EOS, the system message before the first user message. */
    @Test
    void mistralV1WrapsUserTurnsInInst() {
        ChatTemplate t = fixture("mixtral-8x7b-instruct-v0.1.jinja", "<s>", "</s>");
        assertThat(t.render(SYSTEM_AND_USER)).isEqualTo("<s> [INST] You are a helpful assistant.\n\nHello! [/INST]");
        assertThat(t.render(THREE_TURNS))
                .isEqualTo("<s> [INST] Hi [/INST] Hello! How can I help?</s> [INST] What is 2+2? [/INST]");
        assertThatThrownBy(() -> t.render(List.of(new Message("assistant", "first"))))
                .hasMessageStartingWith("After the optional system message, conversation roles must alternate");
    }

    /** Mistral v3 (tekken): no spaces around [INST], the system message before the last user message. */
    @Test
    void mistralNemoPutsTheSystemMessageInTheLastUserTurn() {
        ChatTemplate t = fixture("mistral-nemo-instruct-2407.jinja", "<s>", "</s>");
        assertThat(t.render(SYSTEM_AND_USER)).isEqualTo("<s>[INST]You are a helpful assistant.\n\nHello![/INST]");
        assertThat(t.render(List.of(new Message("system", "Be brief."), new Message("user", "Hi"),
                new Message("assistant", "Hello!"), new Message("user", "2+2?"))))
                .isEqualTo("<s>[INST]Hi[/INST]Hello!</s>[INST]Be brief.\n\n2+2?[/INST]");
    }

    @Test
    void chatMlOfTheGeneratedModelsEndsWithTheAssistantsTurn() {
        ChatTemplate t = TEMPLATES.compile(io.butterfly.common.model.generate.TokenizerGenerator.CHAT_TEMPLATE, "<s>",
                "</s>");
        assertThat(t.render(SYSTEM_AND_USER)).isEqualTo("""
                <|im_start|>system
                You are a helpful assistant.<|im_end|>
                <|im_start|>user
                Hello!<|im_end|>
                <|im_start|>assistant
                """);
    }

    /** What transformers gives a template besides the messages, and Jinja's whitespace rules. */
    @Test
    void theTemplateSeesWhatTransformersGivesIt() {
        ChatTemplate t = TEMPLATES.compile("{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|"
                + "{{ raise_exception is defined }}|{{ strftime_now is defined }}|{{ strftime_now('%Y-%m-%d') }}|"
                + "{{ messages[0].name }}|{{ tools is none }}|{{ foo is defined }}\n", "<s>", "</s>");
        assertThat(t.render(List.of(new Message("user", "x", "ann"))))
                .as("one trailing newline of the template dropped, as Jinja does")
                .isEqualTo("<s>|</s>|true|true|true|2024-09-05|ann|true|false");
        assertThat(TEMPLATES.compile("{% if true %}\n  a\n{% endif %}\n  {% if true %}b{% endif %}\n\n", null, null)
                .render(List.of(new Message("user", "x")))).as("trim_blocks and lstrip_blocks").isEqualTo("  a\nb");
        assertThat(TEMPLATES.compile("[{{ bos_token }}]", null, null).render(List.of(new Message("user", "x"))))
                .as("an undefined special token renders empty").isEqualTo("[]");
    }

    @Test
    void pythonStringMethodsWork() {
        ChatTemplate t = TEMPLATES.compile("{% set m = messages[0].content %}{{ m.strip() }}|{{ m.lstrip() }}|"
                + "{{ m.rstrip(' !') }}|{{ m.strip().startswith('He') }}|{{ m.endswith('x') }}|{{ m.split() }}|"
                + "{{ 'a,b'.split(',') }}|{{ m.strip().lower() }}|{{ m.upper().strip() }}|{{ 'hello world'.title() }}|"
                + "{{ '-'.join(['a', 'b']) }}|{{ m.replace('l', 'L') }}", null, null);
        assertThat(t.render(List.of(new Message("user", "  Hello  world! ")))).isEqualTo("Hello  world!|"
                + "Hello  world! |  Hello  world|true|false|['Hello', 'world!']|['a', 'b']|hello  world!|HELLO  WORLD!|"
                + "Hello World|a-b|  HeLLo  worLd! ");
    }

    // --- a hostile template ---

    @Test
    void noJavaMethodOrPropertyOfAValueIsReachable() {
        assertThat(TEMPLATES.compile("[{{ 'a'.bytes }}]", null, null).render(List.of(new Message("user", "x"))))
                .as("a property of a string is undefined, not its getter's value").isEqualTo("[]");
        for (String call : List.of("'a'.repeat(100000000)", "'a'.getBytes()", "messages.getClass()",
                "messages.clear()", "messages[0].put('role', 'x')", "messages.append(1)", "(1).getClass()",
                "'a'.getClass().forName('java.lang.Runtime')")) {
            assertThatThrownBy(() -> TEMPLATES.compile("{{ " + call + " }}", null, null)
                    .render(List.of(new Message("user", "x")))).as(call).isInstanceOf(ChatTemplateException.class)
                    .matches(e -> !((ChatTemplateException) e).refused(), "a failure of the template, not a refusal");
        }
        assertThat(TEMPLATES.compile("{% for k, v in messages[0].items() %}{{ k }}={{ v }};{% endfor %}"
                + "{{ messages[0].get('role') }}", null, null).render(List.of(new Message("user", "x"))))
                .as("reading a dict, as Python does").isEqualTo("role=user;content=x;user");
    }

    @Test
    void noFileIsIncludedImportedOrExtended() {
        for (String tag : List.of("{% include 'application.yml' %}", "{% import '/etc/passwd' as p %}",
                "{% from 'META-INF/MANIFEST.MF' import x %}", "{% extends '/etc/hostname' %}")) {
            assertThatThrownBy(() -> TEMPLATES.compile(tag + "x", null, null).render(List.of(new Message("user", "x"))))
                    .as(tag).isInstanceOf(ChatTemplateException.class);
        }
    }

    @Test
    void outputAndTimeAreBounded() {
        try {
            String doubled = TEMPLATES.compile("{% set s = 'aaaaaaaa' %}{% for i in range(40) %}{% set s = s ~ s %}"
                    + "{% endfor %}{{ s }}", null, null).render(List.of(new Message("user", "x")));
            assertThat((long) doubled.length()).as("stopped at the output limit").isLessThanOrEqualTo(
                    JinjavaChatTemplates.MAX_OUTPUT);
        } catch (ChatTemplateException refused) {
            // or refused outright: either way, no 8 TB string
        }
        JinjavaChatTemplates hurried = new JinjavaChatTemplates(CLOCK, Duration.ofMillis(300));
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> hurried.compile("{% for a in range(1000) %}{% for b in range(1000) %}"
                + "{% for c in range(1000) %}{% endfor %}{% endfor %}{% endfor %}x", null, null)
                .render(List.of(new Message("user", "x"))))
                .isInstanceOf(ChatTemplateException.class).hasMessageContaining("ran for more than 300 ms");
        assertThat((System.nanoTime() - t0) / 1_000_000).as("ms: the budget, not the loops' 10^9 turns")
                .isLessThan(3_000);
        // A macro calling itself is cut at its first recursion (Jinjava's recursive macro calls are off).
        assertThat(TEMPLATES.compile("{% macro r(n) %}[{{ r(n) }}]{% endmacro %}{{ r(1) }}", null, null)
                .render(List.of(new Message("user", "x")))).isEqualTo("[]");
    }

    /**
     * Found by {@code OpenAiRequestBodyFuzzTest#anyChatBodyIsAdmittedOrRefused} (its input
     * {@code finding-message-content-interpreted-as-template.json}): Jinjava rendered a value holding {@code {{} or
     * {@code {%} again as a template, so a client's message was template code: {@code {{ 7 * 6 }}} became 42, another
     * message's text could be read, and a malformed one failed the render (a 500). Jinja prints a value as text.
     */
    @Test
    void aMessageThatLooksLikeATemplateIsTextNotTemplateCode() {
        ChatTemplate chatMl = TEMPLATES.compile(io.butterfly.common.model.generate.TokenizerGenerator.CHAT_TEMPLATE,
                "<s>", "</s>");
        for (String text : List.of("{{ 7 * 6 }}", "{% for m in messages %}{{ m.content }}{% endfor %}",
                "{{ messages[0].content }}", "Hel{{{{{%%%A%%$%%::::}}}}}:-:>con:ent%%{{{{lo", "{% raw %}x", "{#")) {
            assertThat(chatMl.render(List.of(new Message("system", "secret"), new Message("user", text))))
                    .as(text).isEqualTo("<|im_start|>system\nsecret<|im_end|>\n<|im_start|>user\n" + text
                            + "<|im_end|>\n<|im_start|>assistant\n");
        }
    }

    /**
     * Found by {@code TokenizerConfigFuzzTest}'s campaign (its corpus spent 2 s, the budget, on most inputs): Jinjava
     * records a {@code raise_exception} or a syntax error and renders on, so a refused conversation ran the template's
     * loops to the time budget before it was refused. Jinja stops there; so does a render now.
     */
    @Test
    void aRenderStopsAtItsFirstFatalError() {
        String loops = "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}{{ a }}"
                + "{% endfor %}{% endfor %}{% endfor %}";
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> TEMPLATES.compile("{% if messages[0].role != 'system' %}{{ raise_exception('no system"
                + " message') }}{% endif %}" + loops, null, null).render(List.of(new Message("user", "x"))))
                .isInstanceOf(ChatTemplateException.class).hasMessage("no system message")
                .matches(e -> ((ChatTemplateException) e).refused(), "a refusal");
        assertThatThrownBy(() -> TEMPLATES.compile(loops + "{% endfov %}", null, null)
                .render(List.of(new Message("user", "x")))).isInstanceOf(ChatTemplateException.class)
                .hasMessageContaining("endfov").hasMessageNotContaining("stopped");
        assertThat((System.nanoTime() - t0) / 1_000_000).as("ms: stopped at the error, not at the 5 s budget")
                .isLessThan(1_000);
    }

    @Test
    void aBrokenTemplateFailsRatherThanRenderingPartly() {
        assertThatThrownBy(() -> TEMPLATES.compile("{{ unknown_function(1) }}{% if %}", null, null)
                .render(List.of(new Message("user", "x")))).isInstanceOf(ChatTemplateException.class)
                .hasMessageStartingWith("the model's chat template failed");
    }

    private static ChatTemplate fixture(String name, String bos, String eos) {
        try (InputStream in = JinjavaChatTemplatesTest.class.getResourceAsStream("/chat-templates/" + name)) {
            return TEMPLATES.compile(new String(in.readAllBytes(), StandardCharsets.UTF_8), bos, eos);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
