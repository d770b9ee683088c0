package io.butterfly.coordinator.api.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import io.butterfly.coordinator.api.rest.AsyncMvc;
import io.butterfly.coordinator.api.rest.InferenceStreams;
import io.butterfly.coordinator.api.rest.ProblemHandler;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.inference.ScriptedCluster;
import io.butterfly.coordinator.jinja.JinjavaChatTemplates;
import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.model.Tokenizer;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.http.MediaType;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Tool calls through Qwen2.5's own chat template (test resources chat-templates/; the generated tokenizer has its
 * ChatML tokens) over a real inference service with scripted pipeline steps: the tools are shown in the prompt as the
 * template writes them, a named or required call's arguments are constrained to the function's schema (whatever the
 * scripted stage makes likely), and the call and the tool's answer sent back are rendered in the template's format.
 */
class ToolCallsTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String TOOLS = """
            [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
              "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 3},
                "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"], "additionalProperties": false}, "strict": true}},
             {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties":
               {"utc": {"type": "boolean"}}, "required": ["utc"], "additionalProperties": false}, "strict": true}}]""";
    private static final String USER = "[{\"role\": \"user\", \"content\": \"Weather?\"}]";

    private ScriptedCluster cluster;
    private Tokenizer tokenizer;
    private MockMvc mvc;

    @BeforeEach
    void ready(@TempDir Path dir) throws Exception {
        ChatTemplate qwen;
        try (InputStream in = ToolCallsTest.class.getResourceAsStream("/chat-templates/qwen2.5-7b-instruct.jinja")) {
            qwen = new JinjavaChatTemplates(Clock.systemUTC()).compile(new String(in.readAllBytes(),
                    StandardCharsets.UTF_8), null, "<|im_end|>");
        }
        cluster = new ScriptedCluster(dir);
        tokenizer = cluster.tokenizer();
        this.qwen = qwen;
        mvc = mvcOver(cluster.service(ScriptedCluster.following(cluster.wordThenCheckMark()), qwen, 1024));
    }

    private ChatTemplate qwen;

    private static MockMvc mvcOver(InferenceService inference) {
        InferenceStreams streams = new InferenceStreams(inference, ReadyCluster.props("coordinator-0"));
        return MockMvcBuilders.standaloneSetup(new ChatCompletionsController(inference, streams, Clock.systemUTC(), JSON,
                        ReadyCluster.props("coordinator-0")))
                .setControllerAdvice(new ProblemHandler(), new OpenAiErrors()).build();
    }

    @AfterEach
    void close() {
        cluster.close();
    }

    /**
     * A named call: its arguments are a value of the function's schema for every seed; then the call and the tool's
     * answer go back, and the next prompt is the template's rendering of them (its usage counts those tokens).
     */
    @Test
    void aNamedCallsArgumentsFollowItsSchemaAndTheCallGoesBackThroughTheTemplate() throws Exception {
        for (int seed = 0; seed < 4; seed++) {
            JsonNode c = ok(chat("{\"messages\": " + USER + ", \"tools\": " + TOOLS + ", \"max_tokens\": 40, \"seed\": " + seed
                    + ", \"temperature\": " + (seed % 2) + ", \"tool_choice\": {\"type\": \"function\", \"function\": "
                    + "{\"name\": \"get_weather\"}}}"));
            JsonNode choice = c.path("choices").get(0);
            assertThat(choice.path("finish_reason").asString()).isEqualTo("tool_calls");
            JsonNode message = choice.path("message");
            assertThat(message.path("content").isNull()).isTrue();
            JsonNode call = message.path("tool_calls").get(0);
            assertThat(message.path("tool_calls").size()).isEqualTo(1);
            assertThat(call.path("id").asString()).matches("[A-Za-z0-9]{9}");
            assertThat(call.path("type").asString()).isEqualTo("function");
            assertThat(call.path("function").path("name").asString()).isEqualTo("get_weather");
            String arguments = call.path("function").path("arguments").asString();
            assertWeatherArguments(arguments);

            String back = "[{\"role\": \"user\", \"content\": \"Weather?\"}, {\"role\": \"assistant\", \"content\": null, "
                    + "\"tool_calls\": [" + JSON.writeValueAsString(call) + "]}, {\"role\": \"tool\", \"tool_call_id\": \""
                    + call.path("id").asString() + "\", \"content\": \"{\\\"temp\\\": 21}\"}]";
            JsonNode next = ok(chat("{\"messages\": " + back + ", \"tools\": " + TOOLS + ", \"max_tokens\": 2, "
                    + "\"tool_choice\": \"none\", \"ignore_eos\": true}"));
            String rendered = "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
                    + "<|im_end|>\n<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
                    + "{\"name\": \"get_weather\", \"arguments\": " + pythonJson(arguments) + "}\n</tool_call><|im_end|>\n"
                    + "<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>\n"
                    + "<|im_start|>assistant\n";
            assertThat(next.path("usage").path("prompt_tokens").asInt()).as("the call and answer as Qwen's template "
                    + "writes them").isEqualTo(tokenizer.encode(rendered, false).length);
            assertThat(next.path("choices").get(0).path("message").has("tool_calls")).isFalse();
        }
    }

    /** With tools shown (auto) the prompt holds them as Qwen's system turn lists them. */
    @Test
    void theToolsAreShownInTheTemplatesSystemTurn() throws Exception {
        JsonNode c = ok(chat("{\"messages\": " + USER + ", \"tools\": " + TOOLS + ", \"max_tokens\": 2, "
                + "\"ignore_eos\": true}"));
        int withTools = c.path("usage").path("prompt_tokens").asInt();
        JsonNode none = ok(chat("{\"messages\": " + USER + ", \"tools\": " + TOOLS + ", \"max_tokens\": 2, "
                + "\"ignore_eos\": true, \"tool_choice\": \"none\"}"));
        assertThat(withTools).isGreaterThan(none.path("usage").path("prompt_tokens").asInt() + 50);
        assertThat(c.path("choices").get(0).path("message").has("tool_calls")).as("the scripted text holds no call")
                .isFalse();
    }

    /** {@code required}: a list of calls of the given functions, each with arguments of its own schema. */
    @Test
    void requiredCallsAreCallsOfTheGivenFunctions() throws Exception {
        for (int seed = 0; seed < 4; seed++) {
            String body = "{\"messages\": " + USER + ", \"tools\": " + TOOLS + ", \"max_tokens\": 60, \"seed\": " + seed
                    + ", \"temperature\": 1, \"tool_choice\": \"required\", \"parallel_tool_calls\": false";
            JsonNode message = ok(chat(body + "}")).path("choices").get(0).path("message");
            JsonNode calls = message.path("tool_calls");
            assertThat(calls.size()).isEqualTo(1);
            JsonNode f = calls.get(0).path("function");
            if (f.path("name").asString().equals("get_weather")) {
                assertWeatherArguments(f.path("arguments").asString());
            } else {
                assertThat(f.path("name").asString()).isEqualTo("get_time");
                assertThat(JSON.readTree(f.path("arguments").asString()).path("utc").isBoolean()).isTrue();
            }
            // streamed: the same call, in a delta.tool_calls chunk
            JsonNode streamed = null;
            String finish = null;
            for (String data : stream(body + ", \"stream\": true}")) {
                if (data.equals("[DONE]")) {
                    continue;
                }
                JsonNode choice = JSON.readTree(data).path("choices").get(0);
                if (choice.path("delta").has("tool_calls")) {
                    streamed = choice.path("delta").path("tool_calls");
                }
                assertThat(choice.path("delta").path("content").asString("")).isEmpty();
                finish = choice.path("finish_reason").asString(finish);
            }
            // the same call but for its id (a function of the task: each request is a task of its own)
            assertThat(streamed.get(0).path("index").asInt()).isZero();
            assertThat(streamed.get(0).path("id").asString()).matches("[A-Za-z0-9]{9}");
            assertThat(streamed.get(0).path("function")).isEqualTo(calls.get(0).path("function"));
            assertThat(finish).isEqualTo("tool_calls");
        }
    }

    /** A named call streams as OpenAI's: its id, type and name first, then pieces of its arguments. */
    @Test
    void aNamedCallStreamsItsArgumentsInPieces() throws Exception {
        String body = "{\"messages\": " + USER + ", \"tools\": " + TOOLS + ", \"max_tokens\": 40, \"seed\": 3, \"temperature\": 1, "
                + "\"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}";
        JsonNode whole = ok(chat(body + "}")).path("choices").get(0).path("message").path("tool_calls").get(0);
        StringBuilder arguments = new StringBuilder();
        List<JsonNode> pieces = new ArrayList<>();
        for (String data : stream(body + ", \"stream\": true}")) {
            if (!data.equals("[DONE]")) {
                JsonNode calls = JSON.readTree(data).path("choices").get(0).path("delta").path("tool_calls");
                if (!calls.isMissingNode()) {
                    pieces.add(calls.get(0));
                    arguments.append(calls.get(0).path("function").path("arguments").asString());
                }
            }
        }
        assertThat(pieces.get(0).path("id").asString()).matches("[A-Za-z0-9]{9}");
        assertThat(pieces.get(0).path("function").path("name").asString()).isEqualTo("get_weather");
        assertThat(pieces.size()).isGreaterThan(2);
        assertThat(pieces.subList(1, pieces.size())).allMatch(p -> !p.has("id") && !p.path("function").has("name"));
        assertThat(arguments).hasToString(whole.path("function").path("arguments").asString());
    }

    /**
     * {@code n} choices with tools, streamed: every chunk one choice by its index under the stream's one id, each
     * choice its role first, then its text or call pieces (a call's first piece with its index, id, type and name, the
     * next ones only more arguments, indices from 0 in order), its finish reason last; put together, each choice is the
     * whole answer's choice of that index (the same text, the same calls but for their ids, which name the task) and
     * the usage is the whole answer's. Named, required (parallel calls allowed) and auto: the auto model writes text,
     * then a call in Qwen's format.
     */
    @Test
    void nStreamedChoicesWithToolsAreTheWholeAnswersChoices() throws Exception {
        String named = "\"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}";
        for (int seed = 0; seed < 3; seed++) {
            assertStreamedChoicesAreTheWholeAnswers(mvc, "{\"messages\": " + USER + ", \"tools\": " + TOOLS
                    + ", \"max_tokens\": 40, \"n\": 3, \"temperature\": 1, \"seed\": " + seed + ", " + named, 3);
            assertStreamedChoicesAreTheWholeAnswers(mvc, "{\"messages\": " + USER + ", \"tools\": " + TOOLS
                    + ", \"max_tokens\": 60, \"n\": 2, \"temperature\": 1, \"seed\": " + seed
                    + ", \"tool_choice\": \"required\"", 2);
        }
        String reply = "Let me check.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"utc\": true}}\n</tool_call>";
        long[] script = tokenizer.encode(reply, false);
        // the step that samples the first token comes after the prompt's chunks: known once the prompt's length is
        java.util.concurrent.atomic.AtomicInteger firstSample = new java.util.concurrent.atomic.AtomicInteger();
        MockMvc auto = mvcOver(cluster.service(new io.butterfly.coordinator.inference.ScriptedPipeline(
                ScriptedCluster.TINY.vocabSize(), step -> step - firstSample.get() < script.length
                ? (int) script[Math.max(0, step - firstSample.get())] : (int) ScriptedCluster.TINY.eosTokenId()),
                qwen, 1024));
        String body = "{\"messages\": " + USER + ", \"tools\": " + TOOLS + ", \"max_tokens\": " + (script.length + 5)
                + ", \"n\": 3, \"temperature\": 0";
        int prompt = ok(AsyncMvc.perform(auto, post("/v1/chat/completions").contentType(MediaType.APPLICATION_JSON)
                .content(body + "}"))).path("usage").path("prompt_tokens").asInt();
        firstSample.set((prompt + ScriptedCluster.SCHEDULING.prefillChunkTokens() - 1)
                / ScriptedCluster.SCHEDULING.prefillChunkTokens() - 1);
        JsonNode whole = assertStreamedChoicesAreTheWholeAnswers(auto, body, 3);
        for (JsonNode choice : whole.path("choices")) {
            assertThat(choice.path("message").path("content").asString()).isEqualTo("Let me check.");
            assertThat(choice.path("message").path("tool_calls").get(0).path("function").path("arguments").asString())
                    .isEqualTo("{\"utc\":true}");
            assertThat(choice.path("finish_reason").asString()).isEqualTo("tool_calls");
        }
    }

    /**
     * Streams {@code body} (its {@code n} choices) and asks for it whole (a task of its own: call ids aside, the same
     * seeds give the same choices); checks the stream's chunks and that they make the whole answer. Returns it.
     */
    private JsonNode assertStreamedChoicesAreTheWholeAnswers(MockMvc over, String body, int n) throws Exception {
        JsonNode whole = ok(AsyncMvc.perform(over, post("/v1/chat/completions").contentType(MediaType.APPLICATION_JSON)
                .content(body + "}")));
        MockHttpServletResponse r = AsyncMvc.perform(over, post("/v1/chat/completions")
                .contentType(MediaType.APPLICATION_JSON)
                .content(body + ", \"stream\": true, \"stream_options\": {\"include_usage\": true}}"));
        assertThat(r.getContentType()).as(r.getContentAsString()).startsWith(MediaType.TEXT_EVENT_STREAM_VALUE);
        List<String> data = new ArrayList<>();
        for (String line : r.getContentAsString(StandardCharsets.UTF_8).split("\n")) {
            if (line.startsWith("data: ")) {
                data.add(line.substring("data: ".length()));
            }
        }
        assertThat(data).as(body).last().isEqualTo("[DONE]");
        assertThat(data).filteredOn("[DONE]"::equals).hasSize(1);
        List<JsonNode> chunks = data.subList(0, data.size() - 1).stream().map(JSON::readTree).toList();
        String id = chunks.get(0).path("id").asString();
        StreamedChoice[] choices = new StreamedChoice[n];
        for (int i = 0; i < n; i++) {
            choices[i] = new StreamedChoice();
        }
        for (JsonNode chunk : chunks.subList(0, chunks.size() - 1)) {
            assertThat(chunk.path("id").asString()).isEqualTo(id);
            assertThat(chunk.path("object").asString()).isEqualTo("chat.completion.chunk");
            assertThat(chunk.path("choices").size()).as(chunk.toString()).isEqualTo(1);
            JsonNode choice = chunk.path("choices").get(0);
            int i = choice.path("index").asInt();
            assertThat(i).as(chunk.toString()).isBetween(0, n - 1);
            choices[i].add(choice);
        }
        JsonNode usage = chunks.get(chunks.size() - 1);
        assertThat(usage.path("choices").isEmpty()).as("the last chunk is the usage").isTrue();
        assertThat(usage.path("usage")).isEqualTo(whole.path("usage"));
        java.util.Set<String> ids = new java.util.HashSet<>();
        for (int i = 0; i < n; i++) {
            StreamedChoice s = choices[i];
            JsonNode w = whole.path("choices").get(i);
            assertThat(s.roles).as("choice %d's role", i).isEqualTo(1);
            assertThat(s.finish).as("choice %d's finish", i).isEqualTo(w.path("finish_reason").asString());
            assertThat(s.content).as("choice %d's text", i).hasToString(w.path("message").path("content").asString(""));
            JsonNode calls = w.path("message").path("tool_calls");
            assertThat(s.calls).as("choice %d's calls", i).hasSize(calls.size());
            for (int k = 0; k < calls.size(); k++) {
                assertThat(s.calls.get(k).name).isEqualTo(calls.get(k).path("function").path("name").asString());
                assertThat(s.calls.get(k).arguments).as("choice %d call %d", i, k)
                        .hasToString(calls.get(k).path("function").path("arguments").asString());
                assertThat(ids.add(s.calls.get(k).id)).as("call ids differ").isTrue();
            }
        }
        return whole;
    }

    /** One choice of a stream put together from its chunks, each checked as it comes. */
    private static final class StreamedChoice {
        int roles;
        final StringBuilder content = new StringBuilder();
        final List<StreamedCall> calls = new ArrayList<>();
        String finish;

        void add(JsonNode choice) {
            assertThat(finish).as("nothing of a choice after its finish: %s", choice).isNull();
            JsonNode delta = choice.path("delta");
            if (delta.has("role")) {
                assertThat(roles).as("one role, first").isZero();
                assertThat(delta.path("role").asString()).isEqualTo("assistant");
                roles++;
            } else {
                assertThat(roles).as("the role comes first: %s", choice).isEqualTo(1);
            }
            content.append(delta.path("content").asString(""));
            for (JsonNode piece : delta.path("tool_calls")) {
                int k = piece.path("index").asInt(-1);
                JsonNode f = piece.path("function");
                if (k == calls.size()) {
                    assertThat(piece.path("id").asString()).as("a call's first piece: %s", piece).matches("[A-Za-z0-9]{9}");
                    assertThat(piece.path("type").asString()).isEqualTo("function");
                    assertThat(f.path("name").asString()).isNotEmpty();
                    calls.add(new StreamedCall(piece.path("id").asString(), f.path("name").asString()));
                } else {
                    assertThat(k).as("a piece continues the last call: %s", piece).isEqualTo(calls.size() - 1);
                    assertThat(piece.has("id") || f.has("name")).as("only the first piece names the call").isFalse();
                }
                calls.get(k).arguments.append(f.path("arguments").asString(""));
            }
            if (!choice.path("finish_reason").isNull() && !choice.path("finish_reason").isMissingNode()) {
                finish = choice.path("finish_reason").asString();
            }
        }
    }

    private record StreamedCall(String id, String name, StringBuilder arguments) {
        StreamedCall(String id, String name) {
            this(id, name, new StringBuilder());
        }
    }

    /** A value of get_weather's schema: exactly city (at most 3 characters) and unit (c or f). */
    private static void assertWeatherArguments(String arguments) {
        JsonNode v = JSON.readTree(arguments);
        assertThat(v.propertyNames()).containsExactly("city", "unit");
        String city = v.get("city").asString();
        assertThat(city.codePointCount(0, city.length())).isLessThanOrEqualTo(3);
        assertThat(v.get("unit").asString()).isIn("c", "f");
    }

    /** {@code arguments} as the template's {@code tojson} writes the dict (Python's json.dumps). */
    private static String pythonJson(String arguments) {
        JsonNode v = JSON.readTree(arguments);
        List<String> parts = new ArrayList<>();
        v.properties().forEach(e -> parts.add(JSON.writeValueAsString(e.getKey()) + ": "
                + JSON.writeValueAsString(e.getValue())));
        return "{" + String.join(", ", parts) + "}";
    }

    private MockHttpServletResponse chat(String body) throws Exception {
        return AsyncMvc.perform(mvc, post("/v1/chat/completions").contentType(MediaType.APPLICATION_JSON).content(body));
    }

    private List<String> stream(String body) throws Exception {
        MockHttpServletResponse r = chat(body);
        assertThat(r.getContentType()).as(r.getContentAsString()).startsWith(MediaType.TEXT_EVENT_STREAM_VALUE);
        List<String> data = new ArrayList<>();
        for (String line : r.getContentAsString(StandardCharsets.UTF_8).split("\n")) {
            if (line.startsWith("data: ")) {
                data.add(line.substring("data: ".length()));
            }
        }
        return data;
    }

    private static JsonNode ok(MockHttpServletResponse r) throws Exception {
        assertThat(r.getStatus()).as(r.getContentAsString()).isEqualTo(200);
        return JSON.readTree(r.getContentAsString(StandardCharsets.UTF_8));
    }
}
