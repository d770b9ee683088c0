package io.butterfly.coordinator.jinja;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.model.ChatTemplate.Message;
import io.butterfly.coordinator.model.ChatTemplate.ToolCall;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * The templates that take {@code tools} (Qwen2.5, Llama 3.2, Mistral Nemo: test resources chat-templates/), rendered
 * with a tool, an assistant's call and the tool's answer as transformers renders them: the expected texts are written
 * from each template's source, with the tools printed as Python's {@code json.dumps} prints them.
 */
class ToolTemplatesTest {

    private static final Clock CLOCK = Clock.fixed(Instant.parse("2024-09-05T10:00:00Z"), ZoneOffset.UTC);
    private static final JinjavaChatTemplates TEMPLATES = new JinjavaChatTemplates(CLOCK);
    @SuppressWarnings("unchecked")
    private static final List<Object> TOOLS = JsonMapper.builder().build().readValue("""
            [{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]""",
            List.class);
    private static final String TOOL_JSON = "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
            + "\"description\": \"Current weather of a city\", \"parameters\": {\"type\": \"object\", \"properties\": "
            + "{\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}";
    private static final List<Message> ROUND_TRIP = List.of(new Message("system", "Be brief."),
            new Message("user", "Weather in Paris?"),
            new Message("assistant", null, null, List.of(new ToolCall("abcdefghi", "get_weather",
                    "{\"city\": \"Paris\"}")), null),
            new Message("tool", "{\"temp\": 21}", null, null, "abcdefghi"));

    @Test
    void qwen25ListsTheToolsInTheSystemTurnAndTagsCallsAndAnswers() {
        ChatTemplate t = fixture("qwen2.5-7b-instruct.jinja", null, "<|im_end|>");
        assertThat(t.render(ROUND_TRIP, TOOLS)).isEqualTo("""
                <|im_start|>system
                Be brief.

                # Tools

                You may call one or more functions to assist with the user query.

                You are provided with function signatures within <tools></tools> XML tags:
                <tools>
                %s
                </tools>

                For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
                <tool_call>
                {"name": <function-name>, "arguments": <args-json-object>}
                </tool_call><|im_end|>
                <|im_start|>user
                Weather in Paris?<|im_end|>
                <|im_start|>assistant
                <tool_call>
                {"name": "get_weather", "arguments": {"city": "Paris"}}
                </tool_call><|im_end|>
                <|im_start|>user
                <tool_response>
                {"temp": 21}
                </tool_response><|im_end|>
                <|im_start|>assistant
                """.formatted(TOOL_JSON));
    }

    /**
     * The generated models' ChatML (the demo model's) takes tools as Qwen2.5 does, word for word; an assistant's call
     * with null content is its call blocks (Jinjava would print a null content as "null": the template never adds it).
     */
    @Test
    void theGeneratedModelsChatMlTakesToolsAsQwen25Does() {
        ChatTemplate generated = TEMPLATES.compile(io.butterfly.common.model.generate.TokenizerGenerator.CHAT_TEMPLATE,
                "<s>", "</s>");
        ChatTemplate qwen = fixture("qwen2.5-7b-instruct.jinja", null, "<|im_end|>");
        assertThat(generated.render(ROUND_TRIP, TOOLS)).isEqualTo(qwen.render(ROUND_TRIP, TOOLS));
        assertThat(generated.render(ROUND_TRIP.subList(1, 4), TOOLS)).startsWith("<|im_start|>system\n# Tools\n\n")
                .doesNotContain("null");
        assertThat(generated.render(ROUND_TRIP)).as("without tools: the calls and answers, no tool list").isEqualTo("""
                <|im_start|>system
                Be brief.<|im_end|>
                <|im_start|>user
                Weather in Paris?<|im_end|>
                <|im_start|>assistant
                <tool_call>
                {"name": "get_weather", "arguments": {"city": "Paris"}}
                </tool_call><|im_end|>
                <|im_start|>user
                <tool_response>
                {"temp": 21}
                </tool_response><|im_end|>
                <|im_start|>assistant
                """);
        assertThat(io.butterfly.coordinator.tools.ToolCallFormat.of(
                io.butterfly.common.model.generate.TokenizerGenerator.CHAT_TEMPLATE))
                .isEqualTo(io.butterfly.coordinator.tools.ToolCallFormat.HERMES);
    }

    /** Llama 3.x: the tools in the first user turn, indented by four; a call is the turn's JSON; answers are ipython's. */
    @Test
    void llama32PutsTheToolsInTheFirstUserTurn() {
        ChatTemplate t = fixture("llama-3.2-3b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>");
        String tool = """
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "description": "Current weather of a city",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "city": {
                                    "type": "string"
                                }
                            },
                            "required": [
                                "city"
                            ]
                        }
                    }
                }""";
        assertThat(t.render(ROUND_TRIP, TOOLS)).isEqualTo("<|begin_of_text|><|start_header_id|>system<|end_header_id|>"
                + "\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 05 Sep 2024\n\n"
                + "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
                + "Given the following functions, please respond with a JSON for a function call with its proper "
                + "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
                + "\"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n" + tool
                + "\n\nWeather in Paris?<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": "
                + "{\"city\": \"Paris\"}}<|eot_id|>"
                // a string is iterable in Jinja: the template prints the answer's JSON string quoted
                + "<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp\\\": 21}\"<|eot_id|>"
                + "<|start_header_id|>assistant<|end_header_id|>\n\n");
    }

    /** Mistral Nemo: the tools before the last user turn, calls after [TOOL_CALLS] with their 9-character ids. */
    @Test
    void mistralNemoListsToolsBeforeTheLastUserTurn() {
        ChatTemplate t = fixture("mistral-nemo-instruct-2407.jinja", "<s>", "</s>");
        assertThat(t.render(ROUND_TRIP, TOOLS)).isEqualTo("<s>[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": "
                + "{\"name\": \"get_weather\", \"description\": \"Current weather of a city\", \"parameters\": "
                + "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}]"
                + "[/AVAILABLE_TOOLS][INST]Weather in Paris?[/INST][TOOL_CALLS][{\"name\": \"get_weather\", "
                + "\"arguments\": {\"city\": \"Paris\"}, \"id\": \"abcdefghi\"}]</s>[TOOL_RESULTS]{\"content\": "
                + "{\"temp\": 21}, \"call_id\": \"abcdefghi\"}[/TOOL_RESULTS]");
    }

    @Test
    void toJsonWritesAsPythonsJsonDumps() {
        Map<String, Object> v = new java.util.LinkedHashMap<>();
        v.put("a", List.of(1, "é", Map.of()));
        v.put("b", Map.of());
        v.put("c", List.of());
        assertThat(PythonJsonFilter.dumps(v, null)).isEqualTo("{\"a\": [1, \"é\", {}], \"b\": {}, \"c\": []}");
        assertThat(PythonJsonFilter.dumps(v, 2)).isEqualTo("{\n  \"a\": [\n    1,\n    \"é\",\n    {}\n  ],\n"
                + "  \"b\": {},\n  \"c\": []\n}");
    }

    /** Jinja's precedence of {@code not} and tests, in tags only: the text and string literals are left alone. */
    @Test
    void notBeforeATestIsReadAsJinjaReadsIt() {
        assertThat(NotIsPrecedence.rewrite("{%- if not tools is defined or not m['a'].b is not none %}not x is y"
                + "{{ 'not a is b' }}{% endif %}")).isEqualTo("{%- if tools is not defined or m['a'].b is none %}"
                + "not x is y{{ 'not a is b' }}{% endif %}");
        ChatTemplate t = TEMPLATES.compile("{{ not tools is defined }} {{ not nope is defined }} {{ 'abc' is iterable }}",
                null, null);
        assertThat(t.render(List.of(new Message("user", "x")), TOOLS)).isEqualTo("false true true");
    }

    private static ChatTemplate fixture(String name, String bos, String eos) {
        try (InputStream in = ToolTemplatesTest.class.getResourceAsStream("/chat-templates/" + name)) {
            return TEMPLATES.compile(new String(in.readAllBytes(), StandardCharsets.UTF_8), bos, eos);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
