package io.butterfly.coordinator.api.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.request;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.api.rest.InferenceStreams;
import io.butterfly.coordinator.api.rest.ProblemHandler;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.inference.ScriptedCluster;
import io.butterfly.coordinator.inference.ScriptedPipeline;
import io.butterfly.coordinator.inference.engine.SchedulerSettings;
import io.butterfly.coordinator.api.rest.AsyncMvc;
import io.butterfly.coordinator.model.Tokenizer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
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
 * OpenAI's completions API over a real inference service and control log with scripted pipeline steps: the objects
 * OpenAI's clients read, the same tokens as the native API, streams, and refusals that name the field in both the
 * problem document and OpenAI's {@code error} object.
 */
class CompletionsControllerTest {

    private static final ModelConfig CONFIG = ScriptedCluster.TINY;
    private static final JsonMapper JSON = JsonMapper.builder().build();

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
        inference = cluster.service(ScriptedCluster.following(script));
        mvc = mvcOver(inference);
    }

    private static MockMvc mvcOver(InferenceService inference) {
        InferenceStreams streams = new InferenceStreams(inference, ReadyCluster.props("coordinator-0"));
        return MockMvcBuilders.standaloneSetup(new CompletionsController(inference, streams, Clock.systemUTC(), JSON))
                .setControllerAdvice(new ProblemHandler(), new OpenAiErrors()).build();
    }

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void aCompletionIsOpenAisTextCompletionObject() throws Exception {
        JsonNode c = ok(completion("""
                {"model": "tiny", "prompt": [1, 17], "max_tokens": %d, "temperature": 0, "ignore_eos": true}
                """.formatted(script.length)));
        assertThat(c.path("object").asString()).isEqualTo("text_completion");
        assertThat(c.path("id").asString()).startsWith("cmpl-");
        String taskId = c.path("id").asString().substring("cmpl-".length());
        assertThat(cluster.recorded().tasks().get(taskId).state()).isEqualTo(TaskRecord.State.COMPLETED);
        assertThat(c.path("model").asString()).isEqualTo("tiny");
        assertThat(c.path("created").asLong()).isCloseTo(System.currentTimeMillis() / 1000, org.assertj.core.data.Offset.offset(60L));
        JsonNode choice = c.path("choices").get(0);
        assertThat(c.path("choices").size()).isEqualTo(1);
        assertThat(choice.path("index").asInt()).isZero();
        assertThat(choice.path("text").asString()).isEqualTo("the✓");
        assertThat(choice.path("finish_reason").asString()).isEqualTo("length");
        assertThat(choice.has("logprobs")).isTrue();
        assertThat(choice.path("logprobs").isNull()).isTrue(); // not asked for
        assertThat(c.path("usage").path("prompt_tokens").asInt()).isEqualTo(2);
        assertThat(c.path("usage").path("completion_tokens").asInt()).isEqualTo(script.length);
        assertThat(c.path("usage").path("total_tokens").asInt()).isEqualTo(2 + script.length);
    }

    @Test
    void logprobsAreTheNativeOnesUnderTheTokensTexts() throws Exception {
        JsonNode lp = ok(completion("""
                {"prompt": [1, 17], "max_tokens": %d, "temperature": 0.8, "seed": 7, "logprobs": 2, "ignore_eos": true}
                """.formatted(script.length))).path("choices").get(0).path("logprobs");
        GenerationResult same = inference.generate(new GenerationRequest(null, List.of(1L, 17L), script.length, 0.8,
                null, 7L, 2, true));

        assertThat(doubles(lp.path("token_logprobs"))).isEqualTo(same.tokenLogprobs());
        List<String> tokens = strings(lp.path("tokens"));
        assertThat(tokens).hasSize(same.tokenIds().size());
        int offset = 0;
        for (int i = 0; i < tokens.size(); i++) {
            assertThat(lp.path("text_offset").get(i).asInt()).isEqualTo(offset);
            offset += tokens.get(i).length();
            // The step's top 2 and the chosen token, by text; the chosen one's entry is at least its own logprob
            // (tokens that read alike, as the bytes of one character do, show once, with the likeliest's).
            JsonNode top = lp.path("top_logprobs").get(i);
            assertThat(top.size()).isBetween(1, 3);
            assertThat(top.path(tokens.get(i)).asDouble()).isGreaterThanOrEqualTo(same.tokenLogprobs().get(i));
            double best = same.topLogprobs().get(i).get(0).logprob();
            assertThat(JSON.convertValue(top, Map.class).values()).contains(best);
        }
    }

    @Test
    void topKIsVllmsWithMinusOneForEveryToken() throws Exception {
        for (int topK : new int[]{1, 3, -1}) {
            JsonNode c = ok(completion("""
                    {"prompt": [1, 17], "max_tokens": %d, "temperature": 1.5, "seed": 11, "top_k": %d, "ignore_eos": true}
                    """.formatted(script.length, topK)));
            GenerationResult same = inference.generate(new GenerationRequest(null, List.of(1L, 17L), script.length, 1.5,
                    null, topK == -1 ? 0 : topK, 11L, null, true, null));
            String text = c.path("choices").get(0).path("text").asString();
            assertThat(text).as("top_k " + topK).isEqualTo(same.text());
            if (topK == 1) {
                assertThat(text).isEqualTo("the✓"); // the scripted token alone survives: as greedy
            } else if (topK == -1) {
                assertThat(text).isNotEqualTo("the✓"); // at temperature 1.5 the other tokens are drawn too
            }
        }
    }

    /** Greedy over the script: the word's tokens' texts join to the word, as in the completion's text. */
    @Test
    void logprobTokensReadAsTheyDoInTheText() throws Exception {
        JsonNode choice = ok(completion("""
                {"prompt": [1, 17], "max_tokens": %d, "temperature": 0, "logprobs": 0, "ignore_eos": true}
                """.formatted(script.length))).path("choices").get(0);
        List<String> tokens = strings(choice.path("logprobs").path("tokens"));
        int word = script.length - 3; // the rest are the three bytes of the check mark
        assertThat(String.join("", tokens.subList(0, word))).isEqualTo("the");
        assertThat(choice.path("text").asString()).isEqualTo("the✓");
        for (JsonNode top : choice.path("logprobs").path("top_logprobs")) {
            assertThat(top.size()).isEqualTo(1); // logprobs 0: the chosen token only
        }
    }

    /** OpenAI's defaults: temperature 1 and a fresh seed per request, unless the request gives one. */
    @Test
    void withoutASeedEachRequestSamplesAfresh() throws Exception {
        String seeded = "{\"prompt\": [1, 17], \"max_tokens\": 24, \"seed\": 3, \"ignore_eos\": true}";
        List<String> seededRuns = List.of(text(ok(completion(seeded))), text(ok(completion(seeded))));
        assertThat(seededRuns.get(0)).isEqualTo(seededRuns.get(1));
        String unseeded = "{\"prompt\": [1, 17], \"max_tokens\": 24, \"ignore_eos\": true}";
        assertThat(text(ok(completion(unseeded)))).isNotEqualTo(text(ok(completion(unseeded))));
        // sampled at temperature 1, not greedy: the script's token has probability e^5 / (e^5 + 511) at each step
        assertThat(seededRuns.get(0)).isNotEqualTo(text(ok(completion(
                "{\"prompt\": [1, 17], \"max_tokens\": 24, \"temperature\": 0, \"ignore_eos\": true}"))));
    }

    @Test
    void aStreamIsChunksThenTheFinishReasonThenDone() throws Exception {
        String body = """
                {"prompt": [[1, 17]], "max_tokens": %d, "temperature": 0, "logprobs": 1, "ignore_eos": true,
                 "stream": true, "stream_options": {"include_usage": true}}
                """.formatted(script.length);
        List<String> data = stream(body);
        assertThat(data).last().isEqualTo("[DONE]");
        List<JsonNode> chunks = data.subList(0, data.size() - 1).stream().map(JSON::readTree).toList();
        assertThat(chunks).hasSize(script.length + 2);
        StringBuilder text = new StringBuilder();
        List<String> tokens = new ArrayList<>();
        for (JsonNode chunk : chunks.subList(0, script.length)) {
            JsonNode choice = chunk.path("choices").get(0);
            assertThat(chunk.path("object").asString()).isEqualTo("text_completion");
            assertThat(choice.path("finish_reason").isNull()).isTrue();
            text.append(choice.path("text").asString());
            tokens.addAll(strings(choice.path("logprobs").path("tokens")));
            assertThat(choice.path("logprobs").path("text_offset").get(0).asInt())
                    .isEqualTo(tokens.subList(0, tokens.size() - 1).stream().mapToInt(String::length).sum());
        }
        assertThat(text).hasToString("the✓");
        assertThat(tokens).hasSize(script.length);
        JsonNode finish = chunks.get(script.length);
        assertThat(finish.path("choices").get(0).path("finish_reason").asString()).isEqualTo("length");
        assertThat(finish.path("choices").get(0).path("text").asString()).isEmpty();
        JsonNode usage = chunks.get(script.length + 1);
        assertThat(usage.path("choices").isEmpty()).isTrue();
        assertThat(usage.path("usage").path("completion_tokens").asInt()).isEqualTo(script.length);
        assertThat(chunks).extracting(c -> c.path("id").asString()).containsOnly(chunks.get(0).path("id").asString());
    }

    @Test
    void aStopStringEndsTheCompletionBeforeIt() throws Exception {
        JsonNode c = ok(completion("""
                {"prompt": "hello", "max_tokens": %d, "temperature": 0, "stop": "✓", "ignore_eos": true}
                """.formatted(script.length + 5)));
        assertThat(text(c)).isEqualTo("the");
        assertThat(c.path("choices").get(0).path("finish_reason").asString()).isEqualTo("stop");
    }

    @Test
    void unsupportedOptionsAreRefusedNamingTheField() throws Exception {
        assertRefused("{\"prompt\": \"hi\", \"n\": 0}", 400, "n");
        assertRefused("{\"prompt\": \"hi\", \"n\": 17}", 400, "n");
        assertRefused("{\"prompt\": [\"a\", \"b\", \"c\"], \"n\": 11}", 400, "n");
        assertRefused("{\"prompt\": \"hi\", \"n\": 3, \"best_of\": 2}", 400, "best_of");
        assertRefused("{\"prompt\": \"hi\", \"best_of\": 17}", 400, "best_of");
        assertRefused("{\"prompt\": [\"a\", \"b\", \"c\"], \"best_of\": 11}", 400, "best_of");
        assertRefused("{\"prompt\": \"hi\", \"best_of\": 2, \"stream\": true}", 400, "best_of");
        assertRefused("{\"prompt\": \"hi\", \"echo\": true}", 400, "echo");
        assertRefused("{\"prompt\": \"hi\", \"suffix\": \"end\"}", 400, "suffix");
        assertRefused("{\"prompt\": \"hi\", \"presence_penalty\": 0.5}", 400, "presence_penalty");
        assertRefused("{\"prompt\": \"hi\", \"frequency_penalty\": -1}", 400, "frequency_penalty");
        assertRefused("{\"prompt\": \"hi\", \"logit_bias\": {\"5\": 10}}", 400, "logit_bias");
        assertRefused("{\"prompt\": \"hi\", \"stream_options\": {\"include_usage\": true}}", 400, "stream_options");
        assertRefused("{\"prompt\": \"hi\", \"repetition_penalty\": 1.2}", 400, "repetition_penalty");
        assertRefused("{\"prompt\": \"hi\", \"top_k\": -2}", 400, "top_k");
        assertRefused("{\"prompt\": \"hi\", \"min_p\": 0.1}", 400, "min_p");
        assertRefused("{\"prompt\": \"hi\", \"min_tokens\": 5}", 400, "min_tokens");
        assertRefused("{\"prompt\": \"hi\", \"stop_token_ids\": [2]}", 400, "stop_token_ids");
        assertRefused("{\"prompt\": \"hi\", \"skip_special_tokens\": false}", 400, "skip_special_tokens");
        assertRefused("{\"prompt\": \"hi\", \"include_stop_str_in_output\": true}", 400, "include_stop_str_in_output");
        assertRefused("{\"prompt\": \"hi\", \"add_special_tokens\": false}", 400, "add_special_tokens");
        assertRefused("{\"prompt\": \"hi\", \"stream\": true, \"stream_options\": {\"continuous_usage_stats\": true}}",
                400, "stream_options.continuous_usage_stats");
        // their neutral values are accepted, as OpenAI's clients send them
        ok(completion("""
                {"prompt": "hi", "max_tokens": 2, "n": 1, "best_of": 1, "echo": false, "presence_penalty": 0,
                 "frequency_penalty": 0, "logit_bias": {}, "user": "u-1", "suffix": null, "stream": false,
                 "repetition_penalty": 1.0, "top_k": -1, "min_p": 0, "min_tokens": 0, "stop_token_ids": [],
                 "skip_special_tokens": true, "include_stop_str_in_output": false, "add_special_tokens": true}
                """));
        assertThat(stream("""
                {"prompt": "hi", "max_tokens": 2, "stream": true, "top_k": 0,
                 "stream_options": {"include_usage": true, "continuous_usage_stats": false}}
                """)).last().isEqualTo("[DONE]");
    }

    @Test
    void badPromptsAreRefusedNamingWhereInThePrompt() throws Exception {
        assertRefused("{\"max_tokens\": 2}", 400, "prompt");
        assertRefused("{\"prompt\": []}", 400, "prompt");
        assertRefused("{\"prompt\": \"  \"}", 400, "prompt");
        assertRefused("{\"prompt\": 5}", 400, "prompt");
        assertRefused("{\"prompt\": [\"a\", \"b\"], \"stream\": true}", 400, "prompt"); // one prompt per stream
        assertRefused("{\"prompt\": [\"a\", 5]}", 400, "prompt[1]");
        assertRefused("{\"prompt\": [\"a\", \" \"]}", 400, "prompt[1]");
        assertRefused("{\"prompt\": [[1, 2], []]}", 400, "prompt[1]");
        assertRefused("{\"prompt\": [" + "\"a\", ".repeat(32) + "\"a\"]}", 400, "prompt");
        assertRefused("{\"prompt\": [1, \"b\"]}", 400, "prompt[1]");
        assertRefused("{\"prompt\": [1, 2.5]}", 400, "prompt[1]");
        assertRefused("{\"prompt\": [1, 600]}", 400, "prompt[1]");
        assertRefused("{\"prompt\": [[1, 17, 600]]}", 400, "prompt[0][2]");
        assertRefused("{\"prompt\": [1, 17], \"max_tokens\": 0}", 400, "max_tokens");
        assertRefused("{\"prompt\": [1, 17], \"logprobs\": 21}", 400, "logprobs");
        assertRefused("{\"prompt\": [1, 17], \"stop\": [\"\"], \"stream\": true}", 400, "stop[0]");
        assertThat(cluster.recorded().tasks()).isEmpty();
    }

    /** Several prompts (as LangChain's batches send them): a choice each, in order, the usage summed. */
    @Test
    void eachPromptOfAListIsItsOwnChoice() throws Exception {
        JsonNode c = ok(completion("""
                {"prompt": [[1, 17], "hello there", [1, 17]], "max_tokens": %d, "temperature": 0, "logprobs": 1,
                 "ignore_eos": true}
                """.formatted(script.length)));
        JsonNode choices = c.path("choices");
        assertThat(choices.size()).isEqualTo(3);
        for (int i = 0; i < 3; i++) {
            assertThat(choices.get(i).path("index").asInt()).isEqualTo(i);
            assertThat(choices.get(i).path("text").asString()).isEqualTo("the✓");
            assertThat(choices.get(i).path("logprobs").path("text_offset").get(0).asInt()).isZero();
        }
        int promptTokens = 2 + tokenizer.encode("hello there").length + 2;
        assertThat(c.path("usage").path("prompt_tokens").asInt()).isEqualTo(promptTokens);
        assertThat(c.path("usage").path("completion_tokens").asInt()).isEqualTo(3 * script.length);
        assertThat(cluster.recorded().tasks()).hasSize(3)
                .allSatisfy((id, t) -> assertThat(t.state()).isEqualTo(TaskRecord.State.COMPLETED));
    }

    /** Every prompt is admitted before any runs: a bad one in the list means none ran. */
    @Test
    void aBadPromptInAListRunsNone() throws Exception {
        assertRefused("{\"prompt\": [[1, 17], [1, 600]], \"max_tokens\": 2}", 400, "prompt[1][1]");
        assertRefused("{\"prompt\": [\"fine\", \"" + "x".repeat(65537) + "\"], \"max_tokens\": 2}", 413, "prompt[1]",
                "context_length_exceeded");
        assertThat(cluster.recorded().tasks()).isEmpty();
        // and their places are free again: the limit (4) would refuse a fifth otherwise
        for (int i = 0; i < 5; i++) {
            ok(completion("{\"prompt\": [1, 17], \"max_tokens\": 1}"));
        }
    }

    @Test
    void anotherModelIsNotFound() throws Exception {
        JsonNode problem = assertRefused("{\"model\": \"gpt-4\", \"prompt\": \"hi\"}", 404, "model", "model_not_found");
        assertThat(problem.path("error_code").asString()).isEqualTo("MANIFEST_NOT_FOUND");
        assertThat(problem.path("detail").asString()).contains("gpt-4").contains("tiny");
        MockHttpServletResponse r = mvc.perform(get("/v1/models/gpt-4")).andReturn().getResponse();
        assertThat(r.getStatus()).isEqualTo(404);
        assertThat(JSON.readTree(r.getContentAsString()).path("error").path("param").asString()).isEqualTo("model");
    }

    @Test
    void modelsListTheServedModel() throws Exception {
        JsonNode list = JSON.readTree(mvc.perform(get("/v1/models")).andReturn().getResponse().getContentAsString());
        assertThat(list.path("object").asString()).isEqualTo("list");
        assertThat(list.path("data").size()).isEqualTo(1);
        JsonNode model = list.path("data").get(0);
        assertThat(model.path("id").asString()).isEqualTo("tiny");
        assertThat(model.path("object").asString()).isEqualTo("model");
        assertThat(model.path("max_model_len").asInt()).isEqualTo(CONFIG.maxPositions());
        JsonNode one = JSON.readTree(mvc.perform(get("/v1/models/tiny")).andReturn().getResponse().getContentAsString());
        assertThat(one).isEqualTo(model);
    }

    /**
     * The status line was sent long before: the failure is a last data event with OpenAI's error object, then [DONE].
     * (A stage that is gone pauses the generation instead, see ResumeTest; a stage that breaks fails it.)
     */
    @Test
    void aFailureAfterTheFirstTokenEndsTheStreamWithAnError() throws Exception {
        java.util.concurrent.atomic.AtomicInteger steps = new java.util.concurrent.atomic.AtomicInteger();
        Pipeline failing = ScriptedPipeline.answering(in -> {
            if (steps.getAndIncrement() == 2) {
                throw new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.INTERNAL, "worker w2 broke");
            }
            float[] logits = new float[CONFIG.vocabSize()];
            logits[100] = 5f;
            return ScriptedPipeline.answer(logits, 1, CONFIG.vocabSize());
        });
        mvc = mvcOver(cluster.service(failing));
        List<String> data = stream("{\"prompt\": [1, 17], \"max_tokens\": 8, \"stream\": true}");

        assertThat(data).hasSize(4).last().isEqualTo("[DONE]");
        JsonNode error = JSON.readTree(data.get(2));
        assertThat(error.path("status").asInt()).isEqualTo(502);
        assertThat(error.path("type").asString()).isEqualTo("about:blank");
        assertThat(error.path("detail").asString()).contains("worker w2 broke");
        assertThat(error.path("error").path("message").asString()).isEqualTo(error.path("detail").asString());
        assertThat(error.path("error").path("type").asString()).isEqualTo("server_error");
        assertThat(error.path("error").path("code").asString()).isEqualTo("INTERNAL_ERROR");
        assertThat(cluster.recorded().tasks().values()).singleElement()
                .satisfies(t -> assertThat(t.state()).isEqualTo(TaskRecord.State.FAILED));
    }

    @Test
    void tooManyTasksIsARateLimitError() throws Exception {
        // No room in the queue at all: every request is one too many.
        InferenceService full = cluster.service(ScriptedCluster.following(script), new SchedulerSettings(1, 64, 32, 0, 0));
        MockHttpServletResponse r = AsyncMvc.perform(mvcOver(full), post("/v1/completions")
                .contentType(MediaType.APPLICATION_JSON).content("{\"prompt\": \"hi\"}"));
        assertThat(r.getStatus()).isEqualTo(429);
        assertThat(r.getHeader("Retry-After")).isEqualTo("1");
        assertThat(JSON.readTree(r.getContentAsString()).path("error").path("type").asString())
                .isEqualTo("rate_limit_error");
    }

    private JsonNode assertRefused(String body, int status, String field) throws Exception {
        return assertRefused(body, status, field, null);
    }

    /** {@code code}: OpenAI's error code expected, or null for the problem's own {@code error_code} (if any). */
    private JsonNode assertRefused(String body, int status, String field, String code) throws Exception {
        MockHttpServletResponse r = completion(body);
        assertThat(r.getStatus()).as(r.getContentAsString()).isEqualTo(status);
        assertThat(r.getContentType()).startsWith(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
        JsonNode problem = JSON.readTree(r.getContentAsString(StandardCharsets.UTF_8));
        assertThat(problem.path("field").asString()).isEqualTo(field);
        JsonNode error = problem.path("error");
        assertThat(error.path("param").asString()).isEqualTo(field);
        assertThat(error.path("message").asString()).isEqualTo(problem.path("detail").asString()).isNotBlank();
        assertThat(error.path("type").asString()).isEqualTo("invalid_request_error");
        assertThat(error.path("code")).isEqualTo(code != null ? JSON.getNodeFactory().stringNode(code)
                : problem.has("error_code") ? problem.path("error_code") : JSON.getNodeFactory().nullNode());
        return problem;
    }

    /**
     * {@code n} choices per prompt, prompt-major, each the completion a request with its derived seed gives alone; the
     * usage counts each prompt once.
     */
    @org.junit.jupiter.api.Test
    void nChoicesEachHaveASeedOfTheirOwn() throws Exception {
        JsonNode c = ok(completion("""
                {"prompt": ["The butterfly", "A moth"], "max_tokens": 3, "temperature": 1, "seed": 5, "n": 2}"""));
        JsonNode choices = c.path("choices");
        assertThat(choices.size()).isEqualTo(4); // the test's queue has 4 places
        int promptTokens = 0;
        int completionTokens = 0;
        for (int i = 0; i < 4; i++) {
            assertThat(choices.get(i).path("index").asInt()).isEqualTo(i);
            String prompt = i < 2 ? "The butterfly" : "A moth";
            JsonNode alone = ok(completion("{\"prompt\": \"" + prompt + "\", \"max_tokens\": 3, \"temperature\": 1, "
                    + "\"seed\": " + io.butterfly.coordinator.inference.sampling.ChoiceSeeds.of(5, i % 2) + "}"));
            assertThat(choices.get(i).path("text").asString()).as("choice %d", i)
                    .isEqualTo(alone.path("choices").get(0).path("text").asString());
            promptTokens += i % 2 == 0 ? alone.path("usage").path("prompt_tokens").asInt() : 0;
            completionTokens += alone.path("usage").path("completion_tokens").asInt();
        }
        assertThat(c.path("usage").path("prompt_tokens").asInt()).isEqualTo(promptTokens);
        assertThat(c.path("usage").path("completion_tokens").asInt()).isEqualTo(completionTokens);
    }

    /**
     * {@code n} choices of one prompt streamed as OpenAI streams them: one id, each chunk one choice by its index (the
     * text of the whole answer's choice of that index, then its finish reason), then the usage of all and one [DONE].
     */
    @Test
    void nChoicesStreamInterleavedByIndex() throws Exception {
        String body = "{\"prompt\": \"The butterfly\", \"max_tokens\": 4, \"temperature\": 1, \"seed\": 11, \"n\": 3, "
                + "\"logprobs\": 1";
        JsonNode whole = ok(completion(body + "}"));
        List<String> data = stream(body + ", \"stream\": true, \"stream_options\": {\"include_usage\": true}}");

        assertThat(data).last().isEqualTo("[DONE]");
        assertThat(data).filteredOn("[DONE]"::equals).hasSize(1);
        List<JsonNode> chunks = data.subList(0, data.size() - 1).stream().map(JSON::readTree).toList();
        assertThat(chunks).extracting(ch -> ch.path("id").asString()).containsOnly(chunks.get(0).path("id").asString());
        StringBuilder[] texts = {new StringBuilder(), new StringBuilder(), new StringBuilder()};
        List<List<Double>> logprobs = List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        String[] finish = new String[3];
        for (JsonNode chunk : chunks.subList(0, chunks.size() - 1)) {
            assertThat(chunk.path("choices").size()).isEqualTo(1);
            JsonNode choice = chunk.path("choices").get(0);
            int i = choice.path("index").asInt();
            assertThat(finish[i]).as("nothing of choice %d after its finish", i).isNull();
            texts[i].append(choice.path("text").asString());
            choice.path("logprobs").path("token_logprobs").forEach(lp -> logprobs.get(i).add(lp.asDouble()));
            if (!choice.path("finish_reason").isNull()) {
                finish[i] = choice.path("finish_reason").asString();
            }
        }
        for (int i = 0; i < 3; i++) {
            JsonNode w = whole.path("choices").get(i);
            assertThat(texts[i]).as("choice %d", i).hasToString(w.path("text").asString());
            assertThat(logprobs.get(i)).isEqualTo(doubles(w.path("logprobs").path("token_logprobs")));
            assertThat(finish[i]).isEqualTo(w.path("finish_reason").asString());
        }
        JsonNode usage = chunks.get(chunks.size() - 1);
        assertThat(usage.path("choices").isEmpty()).isTrue();
        assertThat(usage.path("usage")).isEqualTo(whole.path("usage"));
        // such a stream is not resumed by an event id: its events have none, and one sent back is refused
        MockHttpServletResponse resumed = AsyncMvc.perform(mvc, post("/v1/completions")
                .contentType(MediaType.APPLICATION_JSON).header("Last-Event-ID", "x:1")
                .content(body + ", \"stream\": true}"));
        assertThat(resumed.getStatus()).isEqualTo(400);
        assertThat(JSON.readTree(resumed.getContentAsString()).path("field").asString()).isEqualTo("Last-Event-ID");
    }

    /**
     * {@code best_of}: every candidate runs with its derived seed (as choice i of {@code n} = best_of would), and the
     * {@code n} with the highest sum of token logprobs come back, best first; the usage counts every candidate.
     */
    @Test
    void bestOfReturnsTheCandidatesWithTheHighestCumulativeLogprob() throws Exception {
        for (long seed : new long[] {3, 21, 40}) {
            String body = "{\"prompt\": \"A moth\", \"max_tokens\": 4, \"temperature\": 1.5, \"seed\": " + seed
                    + ", \"logprobs\": 0, ";
            JsonNode all = ok(completion(body + "\"n\": 4}"));
            JsonNode best = ok(completion(body + "\"n\": 2, \"best_of\": 4}"));
            List<Double> scores = new ArrayList<>();
            for (JsonNode c : all.path("choices")) {
                scores.add(doubles(c.path("logprobs").path("token_logprobs")).stream().mapToDouble(d -> d).sum());
            }
            List<Integer> order = new ArrayList<>(List.of(0, 1, 2, 3));
            order.sort((a, b) -> Double.compare(scores.get(b), scores.get(a)));
            assertThat(best.path("choices").size()).isEqualTo(2);
            for (int k = 0; k < 2; k++) {
                JsonNode c = best.path("choices").get(k);
                assertThat(c.path("index").asInt()).isEqualTo(k);
                assertThat(c.path("text").asString()).as("seed %d, rank %d", seed, k)
                        .isEqualTo(all.path("choices").get(order.get(k)).path("text").asString());
            }
            assertThat(best.path("usage")).isEqualTo(all.path("usage"));
        }
    }

    /**
     * {@code response_format} on /v1/completions: with a strict JSON schema every choice's text is a value of it,
     * whatever the scripted last stage makes likely, streamed or not alike; {@code json_object} gives an object.
     */
    @Test
    void aJsonSchemaCompletionIsAValueOfTheSchemaForEveryChoice() throws Exception {
        String format = """
                {"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": {"type": "object",
                 "properties": {"ok": {"type": "boolean"}, "kind": {"enum": ["a", "b"]}},
                 "required": ["ok", "kind"], "additionalProperties": false}}}""";
        for (int seed = 0; seed < 3; seed++) {
            String body = "{\"prompt\": \"Hi\", \"max_tokens\": 40, \"n\": 2, \"seed\": " + seed
                    + ", \"temperature\": " + (seed % 2) + ", \"response_format\": " + format;
            JsonNode answer = ok(completion(body + "}"));
            String[] streamed = {"", ""};
            for (String chunk : stream(body + ", \"stream\": true}")) {
                JsonNode c = chunk.equals("[DONE]") ? null : JSON.readTree(chunk).path("choices");
                if (c != null && !c.isEmpty()) {
                    streamed[c.get(0).path("index").asInt()] += c.get(0).path("text").asString("");
                }
            }
            for (int i = 0; i < 2; i++) {
                JsonNode choice = answer.path("choices").get(i);
                assertThat(choice.path("finish_reason").asString()).isEqualTo("stop");
                JsonNode value = JSON.readTree(choice.path("text").asString());
                assertThat(value.propertyNames()).containsExactly("ok", "kind");
                assertThat(value.get("ok").isBoolean()).isTrue();
                assertThat(value.get("kind").asString()).isIn("a", "b");
                assertThat(streamed[i]).as("choice %d streamed", i).isEqualTo(choice.path("text").asString());
            }
        }
        JsonNode object = ok(completion("{\"prompt\": \"Hi\", \"max_tokens\": 40, \"seed\": 1, \"response_format\": "
                + "{\"type\": \"json_object\"}}"));
        String text = text(object);
        if (object.path("choices").get(0).path("finish_reason").asString().equals("stop")) {
            assertThat(JSON.readTree(text).isObject()).as(text).isTrue();
        } else {
            assertThat(text).as("cut at max_tokens, an object begun").startsWith("{");
        }
    }

    private MockHttpServletResponse completion(String body) throws Exception {
        return AsyncMvc.perform(mvc, post("/v1/completions").contentType(MediaType.APPLICATION_JSON).content(body));
    }

    private List<String> stream(String body) throws Exception {
        MockHttpServletResponse r = AsyncMvc.perform(mvc, post("/v1/completions")
                .contentType(MediaType.APPLICATION_JSON).content(body));
        assertThat(r.getContentType()).startsWith(MediaType.TEXT_EVENT_STREAM_VALUE);
        List<String> data = new ArrayList<>();
        for (String line : r.getContentAsString(StandardCharsets.UTF_8).split("\n")) {
            if (line.startsWith("data:")) {
                assertThat(line).startsWith("data: "); // as OpenAI writes it; clients strip exactly this
                data.add(line.substring("data: ".length()));
            } else if (line.startsWith("id:")) {
                assertThat(line).matches("id:[0-9a-f-]{36}:\\d+"); // <task id>:<token index>, for Last-Event-ID
            } else {
                assertThat(line).isEmpty(); // unnamed events only: data and the blank line ending each
            }
        }
        return data;
    }

    private static JsonNode ok(MockHttpServletResponse r) throws Exception {
        assertThat(r.getStatus()).as(r.getContentAsString()).isEqualTo(200);
        assertThat(r.getContentType()).startsWith(MediaType.APPLICATION_JSON_VALUE);
        return JSON.readTree(r.getContentAsString(StandardCharsets.UTF_8));
    }

    private static String text(JsonNode completion) {
        return completion.path("choices").get(0).path("text").asString();
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asString()));
        return out;
    }

    private static List<Double> doubles(JsonNode array) {
        return Arrays.stream(JSON.convertValue(array, double[].class)).boxed().toList();
    }
}
