package io.butterfly.coordinator.api.openai;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The OpenAI API's objects, name for name and value for value, as OpenAI's clients read them: whole completions and
 * chat completions with and without logprobs, and every kind of streamed chunk, must equal the answers recorded in
 * {@code src/test/resources/rest-json/} (object members in any order; a null member present where OpenAI writes
 * one). After a deliberate change, {@code -Dbutterfly.rest-json.record=true} writes them anew.
 */
class OpenAiJsonTest {

    private static final Path RECORDED = Path.of("src/test/resources/rest-json");
    private static final JsonMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();
    /** id 0 is a special token (left out of text); 5 ends inside a character. */
    private static final String[] PIECES = {"<s>", "▁The", "▁butter", "fly", "▁effect", "\uFFFD"};

    private static String decode(long[] ids) {
        String joined = Arrays.stream(ids).filter(id -> id != 0).mapToObj(id -> PIECES[(int) id])
                .collect(Collectors.joining()).replace('▁', ' ');
        return joined.startsWith(" ") ? joined.substring(1) : joined;
    }

    private static final List<List<TokenLogprob>> TOP = List.of(
            List.of(new TokenLogprob(2, -0.25), new TokenLogprob(4, -2.0)), List.of(new TokenLogprob(5, -1.5)));
    private static final GenerationResult RESULT = new GenerationResult("t-1", "tiny", List.of(0L, 1L),
            List.of(2L, 5L), " butter\uFFFD", "length", List.of(-0.25, -1.5), TOP, 12.5, 40.0, 80.5,
            Map.of("w1", 3.0), 1.25, 20.5, 0.125);

    @Test
    void completions() throws IOException {
        CompletionJson.Header h = CompletionJson.Header.of("t-1", 1_796_000_000L, "tiny");
        CompletionLogprobs logprobs = new CompletionLogprobs(OpenAiJsonTest::decode, List.of(0L, 1L));
        assertRecorded("openai-completion", CompletionJson.completion(h,
                List.of(new CompletionJson.Choice(0, RESULT, null), new CompletionJson.Choice(1, RESULT,
                        new CompletionLogprobs(OpenAiJsonTest::decode, List.of(0L, 1L)))), 1));
        var lp = logprobs.next(List.of(2L), List.of(-0.25), List.of(TOP.get(0)));
        assertRecorded("openai-completion-chunk", CompletionJson.chunk(h, " butter", lp, null));
        assertRecorded("openai-completion-chunk-plain", CompletionJson.chunk(h, " butter", null, null));
        assertRecorded("openai-completion-chunk-end", CompletionJson.chunk(h, "", null, "length"));
        assertRecorded("openai-completion-chunk-usage", CompletionJson.usageChunk(h, RESULT));
    }

    @Test
    void chatCompletions() throws IOException {
        ChatJson.Header h = ChatJson.Header.of("t-1", 1_796_000_000L, "tiny");
        var lp = new ChatLogprobs(OpenAiJsonTest::decode, List.of(0L, 1L))
                .next(RESULT.tokenIds(), RESULT.tokenLogprobs(), RESULT.topLogprobs());
        assertRecorded("openai-chat", ChatJson.completion(h, RESULT, null));
        assertRecorded("openai-chat-logprobs", ChatJson.completion(h, RESULT, lp));
        assertRecorded("openai-chat-chunk-role", ChatJson.roleChunk(h));
        assertRecorded("openai-chat-chunk", ChatJson.contentChunk(h, " butter", null));
        assertRecorded("openai-chat-chunk-logprobs", ChatJson.contentChunk(h, " butter", lp));
        assertRecorded("openai-chat-chunk-end", ChatJson.finishChunk(h, "stop"));
        assertRecorded("openai-chat-chunk-usage", ChatJson.usageChunk(h, RESULT));
    }

    private static void assertRecorded(String name, Object answer) throws IOException {
        Path file = RECORDED.resolve(name + ".json");
        String actual = JSON.writeValueAsString(answer);
        if (Boolean.getBoolean("butterfly.rest-json.record")) {
            Files.createDirectories(RECORDED);
            Files.writeString(file, actual + "\n");
        }
        JsonNode expected = JSON.readTree(Files.readString(file));
        assertThat(JSON.readTree(actual)).as(name).isEqualTo(expected);
    }
}
