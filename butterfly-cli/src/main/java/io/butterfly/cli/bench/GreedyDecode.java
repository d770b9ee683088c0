package io.butterfly.cli.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A short greedy generation on a running cluster ({@code POST /api/v1/inference}, prompt given as token ids so no
 * tokenizer is involved): its decode tokens/s as the coordinator times them (from the first generated token to the
 * last, the prompt's prefill left out).
 */
final class GreedyDecode {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final int PROMPT_TOKENS = 16;

    private final HttpClient http = HttpClient.newHttpClient();
    private final String coordinatorUrl;

    GreedyDecode(String coordinatorUrl) {
        this.coordinatorUrl = coordinatorUrl;
    }

    /** Decode tokens/s of a greedy generation of {@code tokens} tokens after a {@value #PROMPT_TOKENS}-token prompt. */
    double tokensPerSecond(int tokens) throws IOException, InterruptedException {
        String prompt = LongStream.range(0, PROMPT_TOKENS).map(i -> 1000 + 37 * i)
                .mapToObj(Long::toString).collect(Collectors.joining(", ", "[", "]"));
        String body = "{\"token_ids\": " + prompt + ", \"max_tokens\": " + tokens + ", \"temperature\": 0, \"ignore_eos\": true}";
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(coordinatorUrl + "/api/v1/inference"))
                .header("Content-Type", "application/json").timeout(Duration.ofMinutes(10))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("greedy generation failed: HTTP " + r.statusCode() + " " + r.body());
        }
        JsonNode answer = JSON.readTree(r.body());
        return answer.path("timings").path("decode_tokens_per_second").asDouble();
    }
}
