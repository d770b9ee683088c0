package io.butterfly.coordinator.api.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import io.butterfly.common.model.generate.TokenizerGenerator;
import io.butterfly.coordinator.api.rest.AsyncMvc;
import io.butterfly.coordinator.api.rest.InferenceStreams;
import io.butterfly.coordinator.api.rest.ProblemHandler;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.inference.ScriptedCluster;
import io.butterfly.coordinator.jinja.JinjavaChatTemplates;
import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.model.Tokenizer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
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
 * OpenAI's chat completions over a real inference service, control log and tokenizer with scripted pipeline steps,
 * the generated models' ChatML template rendered by Jinjava: the prompt is the template's text tokenized without
 * added special tokens, the answer is the native API's for those tokens, in the objects and chunks OpenAI's clients
 * read; refusals name the field in both the problem document and OpenAI's {@code error} object. (Which scripted
 * token comes first depends on how many steps the prompt's chunks take, so answers are compared with the native API's.)
 */
class ChatCompletionsControllerTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final ChatTemplate CHATML = new JinjavaChatTemplates(Clock.systemUTC())
            .compile(TokenizerGenerator.CHAT_TEMPLATE, "<s>", "</s>");
    private static final String HELLO = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
            + "<|im_start|>assistant\n";
    private static final String MESSAGES = """
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello!"}]""";

    /** What the scripted last stage makes most likely at each step: "the" then a three-byte character. */
    private long[] script;
    private ScriptedCluster cluster;
    private Tokenizer tokenizer;
    private InferenceService inference;
    private MockMvc mvc;

    @BeforeEach
    void ready(@TempDir Path dir) throws Exception {
        cluster = new ScriptedCluster(dir);
        tokenizer = cluster.tokenizer();
        script = cluster.wordThenCheckMark();
        inference = cluster.service(ScriptedCluster.following(script), CHATML);
        mvc = mvcOver(inference);
    }

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

    /** The prompt is the template's text, its special tokens read as such, and no BOS added (the template has none). */
    @Test
    void anAnswerIsOpenAisChatCompletionOfTheTemplatesPrompt() throws Exception {
        JsonNode c = ok(chat("""
                {"model": "tiny", "messages": %s, "max_completion_tokens": %d, "temperature": 0, "ignore_eos": true}
                """.formatted(MESSAGES, script.length)));
        assertThat(c.path("object").asString()).isEqualTo("chat.completion");
        assertThat(c.path("id").asString()).startsWith("chatcmpl-");
        assertThat(c.path("model").asString()).isEqualTo("tiny");
        JsonNode choice = c.path("choices").get(0);
        assertThat(c.path("choices").size()).isEqualTo(1);
        assertThat(choice.path("message").path("role").asString()).isEqualTo("assistant");
        assertThat(choice.path("message").path("content").asString()).isEqualTo(greedy(HELLO).text());
        assertThat(choice.path("finish_reason").asString()).isEqualTo("length");
        assertThat(choice.has("logprobs") && choice.path("logprobs").isNull()).isTrue();

        long[] prompt = tokenizer.encode(HELLO, false);
        assertThat(prompt[0]).as("no BOS before the template's text").isNotEqualTo(ScriptedCluster.TINY.bosTokenId());
        assertThat(prompt[0]).as("<|im_start|> read as its special token")
                .isEqualTo(TokenizerGenerator.idOf(ScriptedCluster.TINY, TokenizerGenerator.IM_START));
        assertThat(c.path("usage").path("prompt_tokens").asInt()).isEqualTo(prompt.length);
        assertThat(c.path("usage").path("completion_tokens").asInt()).isEqualTo(script.length);
        assertThat(c.path("usage").path("total_tokens").asInt()).isEqualTo(prompt.length + script.length);
    }

    /** Sampled with a seed, the answer is the native API's for the same prompt tokens. */
    @Test
    void theAnswerIsTheNativeGenerationOfThePromptsTokens() throws Exception {
        JsonNode c = ok(chat("""
                {"messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "there"}]}],
                 "max_tokens": %d, "temperature": 1.3, "top_p": 0.9, "seed": 5, "ignore_eos": true}
                """.formatted(script.length)));
        long[] prompt = tokenizer.encode("<|im_start|>user\nHello\nthere<|im_end|>\n<|im_start|>assistant\n", false);
        GenerationResult same = inference.generate(new GenerationRequest(null, Arrays.stream(prompt).boxed().toList(),
                script.length, 1.3, 0.9, 5L, null, true));
        assertThat(c.path("choices").get(0).path("message").path("content").asString()).isEqualTo(same.text());
        assertThat(c.path("usage").path("prompt_tokens").asInt()).isEqualTo(prompt.length);
    }

    /** Without a limit the reply may fill the model's positions (TINY has 64), as OpenAI's does. */
    @Test
    void withoutALimitTheReplyFillsTheContext() throws Exception {
        JsonNode c = ok(chat("""
                {"messages": %s, "temperature": 0, "ignore_eos": true}""".formatted(MESSAGES)));
        int prompt = tokenizer.encode(HELLO, false).length;
        assertThat(c.path("usage").path("completion_tokens").asInt())
                .isEqualTo(ScriptedCluster.TINY.maxPositions() - prompt);
    }

    @Test
    void aStreamIsTheRoleThenTheTextThenTheFinishReasonThenTheUsage() throws Exception {
        List<String> data = stream("""
                {"messages": %s, "max_tokens": %d, "temperature": 0, "ignore_eos": true, "logprobs": true,
                 "top_logprobs": 2, "stream": true, "stream_options": {"include_usage": true}}
                """.formatted(MESSAGES, script.length));
        assertThat(data).last().isEqualTo("[DONE]");
        List<JsonNode> chunks = data.subList(0, data.size() - 1).stream().map(JSON::readTree).toList();
        assertThat(chunks).hasSize(1 + script.length + 2);
        JsonNode role = chunks.get(0).path("choices").get(0);
        assertThat(role.path("delta").path("role").asString()).isEqualTo("assistant");
        assertThat(role.path("delta").path("content").asString()).isEmpty();
        StringBuilder text = new StringBuilder();
        for (JsonNode chunk : chunks.subList(1, 1 + script.length)) {
            JsonNode choice = chunk.path("choices").get(0);
            assertThat(chunk.path("object").asString()).isEqualTo("chat.completion.chunk");
            assertThat(choice.path("delta").has("role")).isFalse();
            assertThat(choice.path("finish_reason").isNull()).isTrue();
            text.append(choice.path("delta").path("content").asString());
            JsonNode lp = choice.path("logprobs").path("content");
            assertThat(lp.size()).isEqualTo(1);
            assertThat(lp.get(0).path("top_logprobs").size()).isEqualTo(2);
            assertThat(lp.get(0).path("logprob").asDouble()).isLessThanOrEqualTo(0);
        }
        assertThat(text).hasToString(greedy(HELLO).text());
        JsonNode finish = chunks.get(1 + script.length).path("choices").get(0);
        assertThat(finish.path("finish_reason").asString()).isEqualTo("length");
        assertThat(finish.path("delta").isEmpty()).isTrue();
        JsonNode usage = chunks.get(chunks.size() - 1);
        assertThat(usage.path("choices").isEmpty()).isTrue();
        assertThat(usage.path("usage").path("completion_tokens").asInt()).isEqualTo(script.length);
        assertThat(chunks.subList(0, chunks.size() - 1)).allMatch(ch -> ch.has("usage") && ch.path("usage").isNull(),
                "usage: null on every chunk but the last, as OpenAI's");
        assertThat(chunks).extracting(ch -> ch.path("id").asString()).containsOnly(chunks.get(0).path("id").asString());
    }

    @Test
    void logprobsListEachTokenWithItsBytesAndAlternatives() throws Exception {
        JsonNode lp = ok(chat("""
                {"messages": %s, "max_tokens": %d, "temperature": 0, "ignore_eos": true, "logprobs": true,
                 "top_logprobs": 3}""".formatted(MESSAGES, script.length)))
                .path("choices").get(0).path("logprobs").path("content");
        assertThat(lp.size()).isEqualTo(script.length);
        for (JsonNode t : lp) {
            assertThat(t.path("top_logprobs").size()).isEqualTo(3);
            assertThat(t.path("top_logprobs").get(0).path("logprob").asDouble())
                    .isGreaterThanOrEqualTo(t.path("top_logprobs").get(2).path("logprob").asDouble());
            if (!t.path("bytes").isNull()) {
                List<Integer> bytes = new ArrayList<>();
                t.path("bytes").forEach(b -> bytes.add(b.asInt()));
                byte[] raw = new byte[bytes.size()];
                for (int i = 0; i < raw.length; i++) {
                    raw[i] = (byte) (int) bytes.get(i);
                }
                assertThat(new String(raw, StandardCharsets.UTF_8)).isEqualTo(t.path("token").asString());
            } else {
                assertThat(t.path("token").asString()).as("a token inside a character").contains("\uFFFD");
            }
        }
    }

    /**
     * With a JSON schema the reply is a value of it, whatever the scripted last stage makes likely ("the", a check
     * mark): it parses, has the schema's fields and types, and ends with the value (stop), streamed or not alike.
     */
    @Test
    void aJsonSchemaReplyIsAValueOfTheSchema() throws Exception {
        String format = """
                {"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": {"type": "object",
                 "properties": {"ok": {"type": "boolean"}, "tag": {"type": "string", "maxLength": 2},
                 "kind": {"enum": ["a", "b"]}},
                 "required": ["ok", "tag", "kind"], "additionalProperties": false}}}""";
        for (int seed = 0; seed < 4; seed++) {
            // the model has 64 positions: a short prompt leaves the reply the rest
            String body = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"seed\": " + seed
                    + ", \"temperature\": " + (seed % 2) + ", \"response_format\": " + format;
            JsonNode answer = ok(chat(body + "}"));
            JsonNode choice = answer.path("choices").get(0);
            assertThat(choice.path("finish_reason").asString()).isEqualTo("stop");
            JsonNode value = JSON.readTree(choice.path("message").path("content").asString());
            assertThat(value.propertyNames()).containsExactly("ok", "tag", "kind");
            assertThat(value.get("ok").isBoolean()).isTrue();
            assertThat(value.get("tag").asString().codePointCount(0, value.get("tag").asString().length()))
                    .isLessThanOrEqualTo(2);
            assertThat(value.get("kind").asString()).isIn("a", "b");
            StringBuilder streamed = new StringBuilder();
            for (String chunk : stream(body + ", \"stream\": true}")) {
                if (!chunk.equals("[DONE]")) {
                    JsonNode c = JSON.readTree(chunk).path("choices");
                    if (!c.isEmpty()) {
                        streamed.append(c.get(0).path("delta").path("content").asString(""));
                    }
                }
            }
            assertThat(streamed.toString()).isEqualTo(choice.path("message").path("content").asString());
        }
    }

    /** {@code n} choices, each the reply its derived seed gives alone; the prompt counted once in the usage. */
    @Test
    void nChoicesEachHaveASeedOfTheirOwn() throws Exception {
        String body = "{\"messages\": " + MESSAGES + ", \"max_completion_tokens\": 3, \"temperature\": 1, \"seed\": ";
        JsonNode c = ok(chat(body + "9, \"n\": 3}"));
        assertThat(c.path("choices").size()).isEqualTo(3);
        int completionTokens = 0;
        for (int i = 0; i < 3; i++) {
            JsonNode alone = ok(chat(body + io.butterfly.coordinator.inference.sampling.ChoiceSeeds.of(9, i) + "}"));
            JsonNode choice = c.path("choices").get(i);
            assertThat(choice.path("index").asInt()).isEqualTo(i);
            assertThat(choice.path("message").path("content").asString()).as("choice %d", i)
                    .isEqualTo(alone.path("choices").get(0).path("message").path("content").asString());
            assertThat(c.path("usage").path("prompt_tokens").asInt())
                    .isEqualTo(alone.path("usage").path("prompt_tokens").asInt());
            completionTokens += alone.path("usage").path("completion_tokens").asInt();
        }
        assertThat(c.path("usage").path("completion_tokens").asInt()).isEqualTo(completionTokens);
    }

    /**
     * {@code n} choices streamed as OpenAI streams them: one id, each chunk one choice by its index, each choice its
     * role, its text (the text the whole answer's choice of that index has) and its finish reason; then the usage of
     * all of them and one [DONE].
     */
    @Test
    void nChoicesStreamInterleavedByIndex() throws Exception {
        String body = "{\"messages\": " + MESSAGES + ", \"max_completion_tokens\": 3, \"temperature\": 1, \"seed\": 9, "
                + "\"n\": 3";
        JsonNode whole = ok(chat(body + "}"));
        List<String> data = stream(body + ", \"stream\": true, \"stream_options\": {\"include_usage\": true}}");

        assertThat(data).last().isEqualTo("[DONE]");
        assertThat(data).filteredOn("[DONE]"::equals).hasSize(1);
        List<JsonNode> chunks = data.subList(0, data.size() - 1).stream().map(JSON::readTree).toList();
        assertThat(chunks).extracting(ch -> ch.path("id").asString()).containsOnly(chunks.get(0).path("id").asString());
        StringBuilder[] texts = {new StringBuilder(), new StringBuilder(), new StringBuilder()};
        int[] roles = new int[3];
        String[] finish = new String[3];
        for (JsonNode chunk : chunks.subList(0, chunks.size() - 1)) {
            assertThat(chunk.path("choices").size()).isEqualTo(1);
            JsonNode choice = chunk.path("choices").get(0);
            int i = choice.path("index").asInt();
            assertThat(finish[i]).as("nothing of choice %d after its finish", i).isNull();
            if (choice.path("delta").has("role")) {
                roles[i]++;
                assertThat(texts[i]).isEmpty();
            }
            texts[i].append(choice.path("delta").path("content").asString(""));
            if (!choice.path("finish_reason").isNull()) {
                finish[i] = choice.path("finish_reason").asString();
            }
        }
        int completionTokens = 0;
        for (int i = 0; i < 3; i++) {
            JsonNode w = whole.path("choices").get(i);
            assertThat(roles[i]).as("choice %d's role", i).isEqualTo(1);
            assertThat(texts[i]).as("choice %d", i).hasToString(w.path("message").path("content").asString());
            assertThat(finish[i]).isEqualTo(w.path("finish_reason").asString());
        }
        JsonNode usage = chunks.get(chunks.size() - 1);
        assertThat(usage.path("choices").isEmpty()).isTrue();
        assertThat(usage.path("usage")).isEqualTo(whole.path("usage"));
        assertThat(java.util.Set.of(texts[0].toString(), texts[1].toString(), texts[2].toString())).as("seeds differ")
                .hasSizeGreaterThan(1);
    }

    @Test
    void whatIsNotImplementedIsRefusedNamingTheField() throws Exception {
        String user = "[{\"role\": \"user\", \"content\": \"Hi\"}]";
        assertRefused("{\"messages\": " + user + ", \"tools\": [{\"type\": \"function\", \"function\": {}}]}",
                "tools[0].function.name");
        assertRefused("{\"messages\": " + user + ", \"tools\": [{\"type\": \"retrieval\"}]}", "tools[0].type");
        assertRefused("{\"messages\": " + user + ", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", "
                + "\"parameters\": {\"type\": \"string\", \"pattern\": \"a\"}}}]}", "tools[0].function.parameters");
        assertRefused("{\"messages\": " + user + ", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}], "
                + "\"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"g\"}}}", "tool_choice.function.name");
        assertRefused("{\"messages\": " + user + ", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}], "
                + "\"tool_choice\": \"always\"}", "tool_choice");
        assertRefused("{\"messages\": " + user + ", \"tool_choice\": \"auto\"}", "tool_choice");
        assertRefused("{\"messages\": " + user + ", \"functions\": [{\"name\": \"f\"}]}", "functions");
        assertRefused("{\"messages\": " + user + ", \"n\": 0}", "n");
        assertRefused("{\"messages\": " + user + ", \"response_format\": {\"type\": \"xml\"}}",
                "response_format.type");
        assertRefused("{\"messages\": " + user + ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": "
                + "{\"name\": \"s\", \"schema\": {\"type\": \"string\", \"pattern\": \"a+\"}}}}",
                "response_format.json_schema.schema");
        assertRefused("{\"messages\": " + user + ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": "
                + "{\"name\": \"s\", \"strict\": true, \"schema\": {\"type\": \"object\", \"properties\": "
                + "{\"a\": {\"type\": \"string\"}}}}}}", "response_format.json_schema.schema");
        assertRefused("{\"messages\": " + user + ", \"response_format\": {\"type\": \"json_schema\"}}",
                "response_format.json_schema");
        assertRefused("{\"messages\": " + user + ", \"audio\": {\"voice\": \"alloy\", \"format\": \"wav\"}}", "audio");
        assertRefused("{\"messages\": " + user + ", \"modalities\": [\"text\", \"audio\"]}", "modalities");
        assertRefused("{\"messages\": " + user + ", \"presence_penalty\": 0.5}", "presence_penalty");
        assertRefused("{\"messages\": " + user + ", \"max_tokens\": 5, \"max_completion_tokens\": 6}",
                "max_completion_tokens");
        assertRefused("{\"messages\": " + user + ", \"top_logprobs\": 2}", "top_logprobs");
        assertRefused("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": "
                + "{\"url\": \"https://x/y.png\"}}]}]}", "messages[0].content[0].type");
        assertRefused("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_audio\", \"input_audio\": "
                + "{\"data\": \"AA==\", \"format\": \"wav\"}}]}]}", "messages[0].content[0].type");
        assertRefused("{\"messages\": [{\"role\": \"tool\", \"content\": \"42\"}]}", "messages[0].tool_call_id");
        assertRefused("{\"messages\": [{\"role\": \"user\", \"content\": \"42\", \"tool_call_id\": \"c1\"}]}",
                "messages[0].tool_call_id");
        assertRefused("{\"messages\": [{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c\"}]}]}",
                "messages[0].tool_calls[0].type");
        assertRefused("{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": [{\"id\": \"c\", \"type\": \"function\", "
                + "\"function\": {\"name\": \"f\", \"arguments\": {}}}]}]}", "messages[0].tool_calls[0].function.arguments");
        // neutral values are accepted: OpenAI's defaults, as clients send them
        ok(chat("{\"messages\": " + user + ", \"n\": 1, \"tool_choice\": \"none\", \"response_format\": {\"type\": "
                + "\"text\"}, \"presence_penalty\": 0, \"max_tokens\": 2, \"max_completion_tokens\": 2, "
                + "\"user\": \"u-1\", \"store\": false, \"modalities\": [\"text\"], \"ignore_eos\": true}"));
    }

    @Test
    void aBadConversationIsRefusedNamingWhereInIt() throws Exception {
        assertRefused("{\"max_tokens\": 2}", "messages");
        assertRefused("{\"messages\": []}", "messages");
        assertRefused("{\"messages\": \"Hi\"}", "messages");
        assertRefused("{\"messages\": [{\"role\": \"robot\", \"content\": \"Hi\"}]}", "messages[0].role");
        assertRefused("{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"user\"}]}",
                "messages[1].content");
        assertRefused("{\"messages\": [{\"role\": \"user\", \"content\": 7}]}", "messages[0].content");
        assertRefused("{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\", \"colour\": \"red\"}]}",
                "messages[0].colour");
        assertRefused("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\"}]}]}",
                "messages[0].content[0].text");
        assertRefused("{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"max_completion_tokens\": 0}",
                "max_completion_tokens");
        JsonNode tooLong = assertRefused(413, "{\"messages\": [{\"role\": \"user\", \"content\": \"%s\"}]}"
                .formatted("word ".repeat(200)), "messages");
        assertThat(tooLong.path("error").path("code").asString()).isEqualTo("context_length_exceeded");
    }

    @Test
    void aModelWithoutAChatTemplateIsRefusedNamingMessages() throws Exception {
        MockMvc without = mvcOver(cluster.service(ScriptedCluster.following(script), (ChatTemplate) null));
        MockHttpServletResponse r = AsyncMvc.perform(without, post("/v1/chat/completions")
                .contentType(MediaType.APPLICATION_JSON).content("{\"messages\": " + MESSAGES + "}"));
        JsonNode problem = refused(r, 400, "messages");
        assertThat(problem.path("detail").asString()).contains("has no chat template");
    }

    @Test
    void whatTheTemplateRefusesIsA400NamingMessagesWithItsWords() throws Exception {
        ChatTemplate strict = new JinjavaChatTemplates(Clock.systemUTC()).compile("{% if messages[0]['role'] == 'system' %}"
                + "{{ raise_exception('System role not supported') }}{% endif %}{{ messages[0]['content'] }}", null, null);
        MockMvc gemmaLike = mvcOver(cluster.service(ScriptedCluster.following(script), strict));
        JsonNode problem = refused(AsyncMvc.perform(gemmaLike, post("/v1/chat/completions")
                .contentType(MediaType.APPLICATION_JSON).content("{\"messages\": " + MESSAGES + "}")), 400, "messages");
        assertThat(problem.path("detail").asString()).endsWith("System role not supported");

        ChatTemplate broken = new JinjavaChatTemplates(Clock.systemUTC()).compile("{{ no_such_function() }}", null, null);
        MockHttpServletResponse failed = AsyncMvc.perform(mvcOver(cluster.service(ScriptedCluster.following(script),
                broken)), post("/v1/chat/completions").contentType(MediaType.APPLICATION_JSON)
                .content("{\"messages\": " + MESSAGES + "}"));
        assertThat(failed.getStatus()).as("the model's fault, not the client's").isEqualTo(500);
        JsonNode error = JSON.readTree(failed.getContentAsString(StandardCharsets.UTF_8));
        assertThat(error.path("detail").asString()).startsWith("the model's chat template failed");
        assertThat(error.path("error").path("type").asString()).isEqualTo("server_error");
    }

    /**
     * Issue 47, item 2: a conversation that makes the template's output pass the engine's limit (here a template that
     * writes each message a hundred times) is the conversation's size, 413 naming messages, not the 500 of a failed
     * template; so is a conversation with more text than a prompt may hold, refused before any template runs.
     */
    @Test
    void aConversationThatOverflowsTheTemplateIs413NotA500() throws Exception {
        ChatTemplate repeating = new JinjavaChatTemplates(Clock.systemUTC()).compile(
                "{% for i in range(100) %}{% for m in messages %}{{ m['content'] }}{% endfor %}{% endfor %}", null, null);
        MockMvc overflowing = mvcOver(cluster.service(ScriptedCluster.following(script), repeating));
        String long60k = "a".repeat(60_000);
        JsonNode problem = refused(AsyncMvc.perform(overflowing, post("/v1/chat/completions")
                .contentType(MediaType.APPLICATION_JSON).content("{\"messages\": [{\"role\": \"user\", \"content\": \""
                        + long60k + "\"}]}")), 413, "messages");
        assertThat(problem.path("detail").asString()).contains("size limits");

        String third = "b".repeat(30_000);
        JsonNode tooMuchText = assertRefused(413, "{\"messages\": [{\"role\": \"user\", \"content\": \"" + third
                + "\"}, {\"role\": \"assistant\", \"content\": \"" + third + "\"}, {\"role\": \"user\", \"content\": \""
                + third + "\"}]}", "messages");
        assertThat(tooMuchText.path("detail").asString()).contains("90000 characters", "65536");
    }

    /** Issue 47, item 2: 20 000 messages were a 500 from the template engine's list limit; now 413 before it runs. */
    @Test
    void tooManyMessagesIs413NamingMessages() throws Exception {
        String many = String.join(", ", java.util.Collections.nCopies(20_000, "{\"role\": \"user\", \"content\": \"a\"}"));
        JsonNode problem = assertRefused(413, "{\"messages\": [" + many + "]}", "messages");
        assertThat(problem.path("detail").asString()).contains("20000 messages", "1024",
                "butterfly.coordinator.max-chat-messages");
    }

    /** The native API's greedy answer to {@code prompt}'s tokens (as the chat's are: no special tokens added). */
    private GenerationResult greedy(String prompt) {
        return inference.generate(new GenerationRequest(null, Arrays.stream(tokenizer.encode(prompt, false)).boxed()
                .toList(), script.length, 0.0, null, 0L, null, true));
    }

    private JsonNode assertRefused(String body, String field) throws Exception {
        return assertRefused(400, body, field);
    }

    private JsonNode assertRefused(int status, String body, String field) throws Exception {
        return refused(chat(body), status, field);
    }

    private static JsonNode refused(MockHttpServletResponse r, int status, String field) throws Exception {
        assertThat(r.getStatus()).as(r.getContentAsString()).isEqualTo(status);
        assertThat(r.getContentType()).startsWith(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
        JsonNode problem = JSON.readTree(r.getContentAsString(StandardCharsets.UTF_8));
        assertThat(problem.path("field").asString()).as(problem.toString()).isEqualTo(field);
        JsonNode error = problem.path("error");
        assertThat(error.path("param").asString()).isEqualTo(field);
        assertThat(error.path("message").asString()).isEqualTo(problem.path("detail").asString()).isNotBlank();
        assertThat(error.path("type").asString()).isEqualTo("invalid_request_error");
        return problem;
    }

    private MockHttpServletResponse chat(String body) throws Exception {
        return AsyncMvc.perform(mvc, post("/v1/chat/completions").contentType(MediaType.APPLICATION_JSON).content(body));
    }

    private List<String> stream(String body) throws Exception {
        MockHttpServletResponse r = chat(body);
        assertThat(r.getContentType()).as(r.getContentAsString()).startsWith(MediaType.TEXT_EVENT_STREAM_VALUE);
        List<String> data = new ArrayList<>();
        for (String line : r.getContentAsString(StandardCharsets.UTF_8).split("\n")) {
            if (line.startsWith("data:")) {
                assertThat(line).startsWith("data: ");
                data.add(line.substring("data: ".length()));
            } else {
                assertThat(line).isEmpty();
            }
        }
        return data;
    }

    private static JsonNode ok(MockHttpServletResponse r) throws Exception {
        assertThat(r.getStatus()).as(r.getContentAsString()).isEqualTo(200);
        assertThat(r.getContentType()).startsWith(MediaType.APPLICATION_JSON_VALUE);
        return JSON.readTree(r.getContentAsString(StandardCharsets.UTF_8));
    }
}
