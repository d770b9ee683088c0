package io.butterfly.coordinator.tools;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Replies read for calls in each format, as the models write them (the formats their templates teach: test resources
 * chat-templates/); what is not a well-formed call stays text.
 */
class ToolCallFormatTest {

    @Test
    void eachTemplateTeachesItsFormat() throws IOException {
        assertThat(ToolCallFormat.of(fixture("qwen2.5-7b-instruct.jinja"))).isEqualTo(ToolCallFormat.HERMES);
        assertThat(ToolCallFormat.of(fixture("llama-3.2-3b-instruct.jinja"))).isEqualTo(ToolCallFormat.LLAMA);
        assertThat(ToolCallFormat.of(fixture("mistral-nemo-instruct-2407.jinja"))).isEqualTo(ToolCallFormat.MISTRAL);
    }

    @Test
    void qwenWritesTaggedCallsAfterItsText() {
        ToolCallFormat.Parsed p = ToolCallFormat.HERMES.parse("Let me look.\n<tool_call>\n{\"name\": \"get_weather\", "
                + "\"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
                + "\"arguments\": {}}\n</tool_call>");
        assertThat(p.content()).isEqualTo("Let me look.");
        assertThat(p.calls()).containsExactly(new ToolCallFormat.Call("get_weather", "{\"city\":\"Paris\",\"days\":2}"),
                new ToolCallFormat.Call("get_time", "{}"));
        // the reply ended at the end token before the closing tag
        assertThat(ToolCallFormat.HERMES.parse("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}").calls())
                .containsExactly(new ToolCallFormat.Call("f", "{\"a\":1}"));
        assertThat(ToolCallFormat.HERMES.parse("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>")
                .content()).isNull();
    }

    @Test
    void llamaWritesTheReplyAsACallObject() {
        ToolCallFormat.Parsed p = ToolCallFormat.LLAMA.parse("{\"name\": \"get_weather\", \"parameters\": {\"city\": "
                + "\"Paris\"}}");
        assertThat(p.content()).isNull();
        assertThat(p.calls()).containsExactly(new ToolCallFormat.Call("get_weather", "{\"city\":\"Paris\"}"));
        assertThat(ToolCallFormat.LLAMA.parse("<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", "
                + "\"parameters\": {\"x\": [1]}}").calls()).containsExactly(new ToolCallFormat.Call("a", "{}"),
                new ToolCallFormat.Call("b", "{\"x\":[1]}"));
    }

    @Test
    void mistralListsItsCallsAfterTheMarker() {
        ToolCallFormat.Parsed p = ToolCallFormat.MISTRAL.parse("[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": "
                + "{\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}]");
        assertThat(p.content()).isNull();
        assertThat(p.calls()).extracting(ToolCallFormat.Call::name).containsExactly("get_weather", "get_time");
    }

    /** A malformed call, text around it, or plain text: the whole reply is text, no call made up. */
    @Test
    void whatIsNotAWellFormedCallIsText() {
        for (String reply : List.of("Hello there", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": </tool_call>",
                "<tool_call>\n[1, 2]\n</tool_call>", "<tool_call>{\"name\": \"f\"}</tool_call> and more text",
                "<tool_call>\n{\"arguments\": {}}\n</tool_call>")) {
            assertThat(ToolCallFormat.HERMES.parse(reply)).isEqualTo(new ToolCallFormat.Parsed(reply, List.of()));
        }
        for (String reply : List.of("The answer is {\"name\": \"f\"}", "{\"name\": \"f\", \"parameters\": ", "{}")) {
            assertThat(ToolCallFormat.LLAMA.parse(reply)).isEqualTo(new ToolCallFormat.Parsed(reply, List.of()));
        }
        assertThat(ToolCallFormat.MISTRAL.parse("[TOOL_CALLS] nope").calls()).isEmpty();
    }

    /**
     * What a stream may send before the calls: never a character of the marker, whatever the split of the text into
     * tokens (seeded random splits).
     */
    @Test
    void aStreamHoldsBackWhatMayBeAMarker() {
        Random random = new Random(51);
        String reply = "Sure <tool <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
        int marker = reply.indexOf("<tool_call>");
        for (int run = 0; run < 200; run++) {
            StringBuilder text = new StringBuilder();
            int sent = 0;
            for (int i = 0; i < reply.length(); ) {
                int n = 1 + random.nextInt(4);
                text.append(reply, i, Math.min(reply.length(), i + n));
                i += n;
                sent = Math.max(sent, ToolCallFormat.HERMES.callsMayBeginAt(text.toString()));
                assertThat(sent).isLessThanOrEqualTo(marker);
            }
            assertThat(sent).isEqualTo(marker);
        }
        assertThat(ToolCallFormat.HERMES.callsMayBeginAt("plain text")).isEqualTo(10);
        assertThat(ToolCallFormat.LLAMA.callsMayBeginAt(" {\"na")).isZero();
        assertThat(ToolCallFormat.LLAMA.callsMayBeginAt("Hi {")).isEqualTo(4);
        assertThat(ToolCallFormat.MISTRAL.callsMayBeginAt("ok [TOOL_")).isEqualTo(3);
    }

    static String fixture(String name) throws IOException {
        try (InputStream in = ToolCallFormatTest.class.getResourceAsStream("/chat-templates/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
