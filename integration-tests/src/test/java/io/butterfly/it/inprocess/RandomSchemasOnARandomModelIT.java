package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.testsupport.RandomSchemas;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Structured outputs on a real (random) transformer: a small generated Llama with its byte-level BPE tokenizer, split
 * over two workers, whose unconstrained output is gibberish (it never parses as JSON), answers seeded random schemas
 * of the supported subset ({@link RandomSchemas}, the schemas the matcher's own test uses on random logits) through
 * the native API and {@code /v1/chat/completions}, greedy and sampled, strict and not, several at once (batched
 * steps, each with its own mask): every answer ends by itself ({@code stop}), parses as one JSON value with nothing
 * after it, and validates against its schema. Many schemas hold literals with characters no token of this vocabulary
 * spells whole ('é', '中', '🦋': property names, enum values), which the matcher builds from byte tokens: every schema
 * runs.
 */
class RandomSchemasOnARandomModelIT {

    /** Four Llama layers as the cluster tests' tiny model, with room for long values (2,048 positions). */
    private static final ModelConfig MODEL = new ModelConfig(Architecture.LLAMA, 4, 64, 4, 2, 160, 512, 2048,
            1e-5, 10000.0, false, 1, 2);
    private static final int SCHEMAS = 48;
    private static final int MAX_TOKENS = 1000;
    /** One JSON value and nothing after it. */
    private static final ObjectMapper STRICT_JSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS).build();

    @TempDir
    Path work;

    @Test
    void everyAnswerToARandomSchemaParsesAndValidates() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(MODEL, 23, model);
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 2; i++) {
                cluster.startWorker(i);
            }
            cluster.startCoordinator("tiny-llama", 2);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(8));

            // unconstrained, the model's output is gibberish: no prompt's answer is JSON
            for (int seed = 0; seed < 4; seed++) {
                ClusterApi.Reply reply = cluster.post("/api/v1/inference", nativeBody(new Random(seed), 60,
                        seed % 2 == 0 ? 0.0 : 1.0, seed, null));
                assertThat(reply.status()).as(reply.body()).isEqualTo(200);
                String free = reply.json().path("text").asString();
                assertThat(parses(free)).as("unconstrained output %s", ClusterApi.JSON.writeValueAsString(free))
                        .isFalse();
                System.out.printf("RandomSchemasOnARandomModelIT: unconstrained %d: %s%n", seed,
                        ClusterApi.JSON.writeValueAsString(free));
            }

            List<Future<String>> answers = new ArrayList<>();
            List<ObjectNode> schemas = new ArrayList<>();
            for (int seed = 0; seed < SCHEMAS; seed++) {
                Random r = new Random(seed);
                boolean strict = r.nextBoolean();
                ObjectNode schema = RandomSchemas.object(r, strict);
                schemas.add(schema);
                ObjectNode format = ClusterApi.JSON.createObjectNode().put("type", "json_schema");
                format.putObject("json_schema").put("name", "s" + seed).put("strict", strict).set("schema", schema);
                double temperature = r.nextBoolean() ? 0.0 : 1.0;
                boolean chat = r.nextBoolean();
                int s = seed;
                answers.add(clients.submit(() -> chat
                        ? answer(cluster.post("/v1/chat/completions", chatBody(r, temperature, s, format)), true)
                        : answer(cluster.post("/api/v1/inference", nativeBody(r, MAX_TOKENS, temperature, s, format)),
                        false)));
            }
            int characters = 0;
            int answered = 0;
            int nonAscii = 0;
            for (int seed = 0; seed < SCHEMAS; seed++) {
                String text = answers.get(seed).get(10, TimeUnit.MINUTES);
                ObjectNode schema = schemas.get(seed);
                answered++;
                JsonNode value = STRICT_JSON.readTree(text);
                assertThat(RandomSchemas.validates(schema, value)).as("seed %d: %s against %s", seed, text, schema)
                        .isTrue();
                characters += text.length();
                nonAscii += text.chars().anyMatch(c -> c >= 0x80) ? 1 : 0;
                System.out.printf("RandomSchemasOnARandomModelIT: schema %d %s%n  answer %s%n", seed, schema, text);
            }
            assertThat(answered).isEqualTo(SCHEMAS);
            assertThat(nonAscii).as("answers with characters of several bytes").isPositive();
            System.out.printf("RandomSchemasOnARandomModelIT: %d of %d schemas answered and valid, %d of them with"
                    + " non-ASCII text, %d characters of JSON%n", answered, SCHEMAS, nonAscii, characters);
        } finally {
            clients.shutdownNow();
        }
    }

    private static String nativeBody(Random r, int maxTokens, double temperature, int seed, JsonNode format) {
        String prompt = r.longs(3 + r.nextInt(12), 3, 500).mapToObj(Long::toString).collect(Collectors.joining(","));
        return "{\"token_ids\": [" + prompt + "], \"max_tokens\": " + maxTokens + ", \"temperature\": " + temperature
                + ", \"seed\": " + seed + (format == null ? "" : ", \"response_format\": " + format) + "}";
    }

    private static String chatBody(Random r, double temperature, int seed, JsonNode format) {
        String[] asks = {"Answer in JSON.", "Fill in the form", "What is the weather in Paris?", "Tell me about cats"};
        ObjectNode body = ClusterApi.JSON.createObjectNode().put("model", "tiny-llama").put("max_tokens", MAX_TOKENS)
                .put("temperature", temperature).put("seed", seed);
        body.putArray("messages").addObject().put("role", "user").put("content", asks[r.nextInt(asks.length)]);
        body.set("response_format", format);
        return body.toString();
    }

    /** The answer's text, once it ended by itself. */
    private static String answer(ClusterApi.Reply reply, boolean chat) {
        assertThat(reply.status()).as(reply.body()).isEqualTo(200);
        JsonNode json = reply.json();
        JsonNode choice = chat ? json.path("choices").get(0) : json;
        String text = chat ? choice.path("message").path("content").asString() : choice.path("text").asString();
        assertThat(choice.path("finish_reason").asString()).as("%s", reply.body()).isEqualTo("stop");
        return text;
    }

    private static boolean parses(String text) {
        try {
            JsonNode value = STRICT_JSON.readTree(text);
            return value != null && !value.isMissingNode();
        } catch (RuntimeException e) {
            return false;
        }
    }
}
