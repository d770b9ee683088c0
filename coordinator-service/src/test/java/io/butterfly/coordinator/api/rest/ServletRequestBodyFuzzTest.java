package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.api.SilentCloseable;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.butterfly.common.model.generate.TokenizerGenerator;
import io.butterfly.common.web.ProblemErrorReportAutoConfiguration;
import io.butterfly.common.web.csrf.CrossSiteRequestsAutoConfiguration;
import io.butterfly.common.web.limits.RequestLimitsAutoConfiguration;
import io.butterfly.coordinator.api.openai.ChatCompletionsController;
import io.butterfly.coordinator.api.openai.CompletionsController;
import io.butterfly.coordinator.api.openai.OpenAiErrors;
import io.butterfly.coordinator.api.security.ApiKeyConfiguration;
import io.butterfly.coordinator.config.ApiKeysProperties;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.inference.ScriptedCluster;
import io.butterfly.coordinator.jinja.JinjavaChatTemplates;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.http.converter.autoconfigure.HttpMessageConvertersAutoConfiguration;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.security.autoconfigure.SecurityAutoConfiguration;
import org.springframework.boot.security.autoconfigure.web.servlet.SecurityFilterAutoConfiguration;
import org.springframework.boot.security.autoconfigure.web.servlet.ServletWebSecurityAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.tomcat.autoconfigure.servlet.TomcatServletWebServerAutoConfiguration;
import org.springframework.boot.validation.autoconfigure.ValidationAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.DispatcherServletAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.WebMvcAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.error.ErrorMvcAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Request bodies through the real servlet container (issue 47, item 5): an embedded Tomcat on a random port with the
 * coordinator's request limits (the body filter, the JSON parser's constraints at their defaults), its API-key
 * security chain (keys set, as {@code ./butterfly up} sets them), its cross-site filter, strict request JSON,
 * controllers, validation and problem handlers, over a READY cluster whose pipeline is scripted; bodies go over HTTP
 * as any client sends them. Whatever the body (malformed JSON, invalid UTF-8, fields of the wrong type, huge strings,
 * arrays and nesting, bodies past the size limit) and whichever key (a user's, none, a wrong one), every answer is 2xx,
 * or 4xx as a problem document (naming the field for 400 and 413, OpenAI's error object under {@code /v1/}); never
 * 5xx. Where {@code RequestBodyFuzzTest} goes through MockMvc, this one has Tomcat's parsing, the filters and the
 * error pages in the path.
 *
 * <p>Two targets: {@link #seededBodiesAreAnsweredOrRefused} mutates valid bodies of each endpoint from a seed
 * ({@code -Dservlet-fuzz.seed}, default 47) for {@code -Dservlet-fuzz.executions} requests (default 200: the plain
 * build); {@link #anyBodyOverHttpIsAnsweredOrRefused} is the Jazzer target (docs/testing.md, fuzzing). Fuzzing it, give
 * Jazzer the packages to instrument ({@code -Djazzer.instrument=io.butterfly.coordinator.api.**,...}, as docs/testing.md
 * does): by default it instruments all of {@code io.butterfly.coordinator}, and the configuration records it rewrites
 * ({@code ApiKeysProperties}) no longer bind, so the context does not start.
 */
@SpringBootTest(classes = ServletRequestBodyFuzzTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ServletRequestBodyFuzzTest {

    private static final String USER = "sk-fuzz-user-0123456789";
    private static final String ADMIN = "sk-fuzz-admin-0123456789";
    private static final List<String> PATHS = List.of("/api/v1/inference", "/api/v1/inference/stream",
            "/v1/completions", "/v1/chat/completions");
    /** A valid body of each path, which the seeded target mutates. */
    private static final List<String> VALID = List.of(
            "{\"token_ids\": [1, 17, 4], \"max_tokens\": 3, \"temperature\": 0.7, \"seed\": 5}",
            "{\"prompt\": \"hello there\", \"max_tokens\": 3, \"logprobs\": 2}",
            "{\"model\": \"tiny\", \"prompt\": \"hello\", \"max_tokens\": 3, \"stream\": false, \"stop\": [\"x\"]}",
            "{\"model\": \"tiny\", \"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\","
                    + " \"content\": \"hi\"}], \"max_tokens\": 3}");
    private static final JsonMapper JSON = JsonMapper.builder().build();
    /**
     * How long a request may take to connect and to be answered ({@code -Dservlet-fuzz.timeout}, seconds; 60 by
     * default). A campaign on a machine where the fuzzer's process is paused now and then (SIGSTOP) needs more: a
     * connect timer that ran out during the pause failed an 8-byte body as "HTTP connect timed out".
     */
    private static final Duration TIMEOUT = Duration.ofSeconds(Long.getLong("servlet-fuzz.timeout", 60));
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(TIMEOUT).build();

    @DynamicPropertySource
    static void keys(DynamicPropertyRegistry registry) {
        try {
            Path dir = Files.createTempDirectory("servlet-fuzz-keys");
            Path users = Files.writeString(dir.resolve("keys.txt"), USER + "\n");
            Path admins = Files.writeString(dir.resolve("admin-keys.txt"), ADMIN + "\n");
            registry.add("butterfly.coordinator.api-keys.file", users::toString);
            registry.add("butterfly.coordinator.api-keys.admin-file", admins::toString);
            // Tomcat's idle and read timeouts no shorter than the client's: after a pause of the whole JVM
            // (SIGSTOP) longer than them, Tomcat closed the connection a request was on, unanswered ("HTTP/1.1
            // header parser received no bytes" for a 55-byte body)
            registry.add("server.tomcat.connection-timeout", () -> TIMEOUT.toMillis() + "ms");
            registry.add("server.tomcat.keep-alive-timeout", () -> TIMEOUT.toMillis() + "ms");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The coordinator's web layer (not its gRPC, Raft or discovery) over a scripted READY cluster. A plain
     * configuration, not a {@code @SpringBootConfiguration}: the web slices of this package look for the nearest of
     * those and would take this one for the application.
     */
    @Configuration(proxyBeanMethods = false)
    @ImportAutoConfiguration({TomcatServletWebServerAutoConfiguration.class, DispatcherServletAutoConfiguration.class,
            WebMvcAutoConfiguration.class, ErrorMvcAutoConfiguration.class, HttpMessageConvertersAutoConfiguration.class,
            JacksonAutoConfiguration.class, ValidationAutoConfiguration.class, SecurityAutoConfiguration.class,
            ServletWebSecurityAutoConfiguration.class, SecurityFilterAutoConfiguration.class,
            RequestLimitsAutoConfiguration.class, CrossSiteRequestsAutoConfiguration.class,
            ProblemErrorReportAutoConfiguration.class})
    @EnableConfigurationProperties(ApiKeysProperties.class)
    @Import({InferenceController.class, CompletionsController.class, ChatCompletionsController.class,
            ProblemHandler.class, OpenAiErrors.class, StrictRequestJson.class, ApiKeyConfiguration.class})
    static class App {
        @Bean(destroyMethod = "close")
        ScriptedCluster cluster() throws IOException {
            return new ScriptedCluster(Files.createTempDirectory("servlet-fuzz"));
        }

        @Bean
        ControlLog control(ScriptedCluster cluster) {
            return cluster.control();
        }

        @Bean
        InferenceService inference(ScriptedCluster cluster) {
            return cluster.service(ScriptedCluster.following(new long[]{5, 9, 11}), new JinjavaChatTemplates(
                    Clock.systemUTC()).compile(TokenizerGenerator.CHAT_TEMPLATE, "<s>", "</s>"));
        }

        @Bean
        CoordinatorProperties props() {
            return ReadyCluster.props("coordinator-0");
        }

        @Bean
        InferenceStreams streams(InferenceService inference, CoordinatorProperties props) {
            return new InferenceStreams(inference, props);
        }

        @Bean
        Clock clock() {
            return Clock.systemUTC();
        }
    }

    @LocalServerPort
    int port;

    // No timeout for the whole run (1 M executions take hours): each request has its own (TIMEOUT).
    @Test
    void seededBodiesAreAnsweredOrRefused() throws Exception {
        long seed = Long.getLong("servlet-fuzz.seed", 47);
        int executions = Integer.getInteger("servlet-fuzz.executions", 200);
        SplittableRandom random = new SplittableRandom(seed);
        int[] byClass = new int[6];
        for (int i = 0; i < executions; i++) {
            int which = random.nextInt(PATHS.size());
            String key = switch (random.nextInt(10)) {
                case 0 -> null;
                case 1 -> "sk-not-a-key";
                default -> USER;
            };
            byte[] body = BodyMutations.mutate(VALID.get(which), random);
            int status = answeredOrRefused(PATHS.get(which), body, key, "seed " + seed + ", execution " + i);
            byClass[status / 100]++;
        }
        // The mutations reach the controllers (2xx) and every kind of refusal, not only the parser's first check.
        assertThat(byClass[2]).as("answered 2xx").isPositive();
        assertThat(byClass[4]).as("refused 4xx").isPositive();
    }

    // Per input: a slow one is a finding too (Jazzer passes it on as libFuzzer's -timeout).
    // The connections this harness makes itself, to this Tomcat, are not the server-side request forgery Jazzer's
    // detector looks for (it stopped the first fuzzed input); any other connection still is one.
    @Timeout(30)
    @FuzzTest(maxDuration = "30s")
    void anyBodyOverHttpIsAnsweredOrRefused(FuzzedDataProvider data) throws Exception {
        String path = PATHS.get(data.consumeInt(0, PATHS.size() - 1));
        try (SilentCloseable toThisTomcat = BugDetectors.allowNetworkConnections(
                (host, to) -> to == port && ("localhost".equals(host) || "127.0.0.1".equals(host)))) {
            answeredOrRefused(path, data.consumeRemainingAsBytes(), USER, "fuzzed");
        }
    }

    /** Sends {@code body} and checks the answer's shape; returns its status. */
    private int answeredOrRefused(String path, byte[] body, String key, String what) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(TIMEOUT).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (key != null) {
            request.header("Authorization", "Bearer " + key);
        }
        HttpResponse<String> r;
        try {
            r = HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException closed) {
            // Tomcat may answer a body past the limit before it is all sent, and close: the answer was a 413 then
            // (RequestSizeLimitsTest reads it off the socket); the client here only sees the connection end.
            assertThat(body.length).as("%s: %s of %d bytes: %s", what, path, body.length, closed).isGreaterThan(1 << 20);
            return 413;
        }
        String text = r.body();
        int status = r.statusCode();
        String shown = text.length() > 400 ? text.substring(0, 400) + "..." : text;
        assertThat(status).as("%s: %s answered %s", what, path, shown).isBetween(200, 499);
        if (status < 300) {
            assertThat(key).as("%s: answered without a valid key", what).isEqualTo(USER);
            assertThat(text).as("%s: %s answered %s", what, path, shown).doesNotContain("event:error");
            return status;
        }
        assertThat(r.headers().firstValue("Content-Type").orElse("")).as("%s: %s answered %s", what, path, shown)
                .startsWith("application/problem+json");
        JsonNode problem = JSON.readTree(text);
        assertThat(problem.path("status").asInt()).as(shown).isEqualTo(status);
        assertThat(problem.path("detail").asString()).as(shown).isNotBlank();
        if (status == 400 || status == 413) {
            // Named as the body spells it: an unknown key "\n" is named "\n" (a campaign's input, kept), so named
            // is a string, not a non-blank one.
            assertThat(problem.path("field").isString()).as("%s: the field named in %s", what, shown).isTrue();
        }
        if (key == null || !key.equals(USER)) {
            assertThat(status).as("%s: without a valid key, %s", what, shown).isIn(401, 413);
        }
        if (path.startsWith("/v1/")) {
            JsonNode error = problem.path("error");
            assertThat(error.path("message").asString()).as(shown).isEqualTo(problem.path("detail").asString());
            assertThat(error.path("type").asString()).as(shown).isIn("invalid_request_error", "rate_limit_error",
                    "authentication_error");
            assertThat(error.has("param")).as(shown).isTrue();
        }
        return status;
    }

    /** Seeded mutations of a valid body: what a broken or hostile client sends. */
    static final class BodyMutations {

        private static final String[] WRONG_VALUES = {"null", "true", "-1", "0", "1e309", "-9223372036854775809",
                "18446744073709551616", "\"\"", "\"x\"", "[]", "[[]]", "{}", "{\"a\": 1}", "[\"1\", 2]", "0.5", "NaN",
                "\"\\ud800\"", "[1, null]", "[-5, 99999999]"};
        private static final String[] FIELDS = {"token_ids", "prompt", "max_tokens", "temperature", "top_p", "top_k",
                "seed", "logprobs", "top_logprobs", "stop", "stream", "messages", "model", "n", "ignore_eos",
                "response_format", "stream_options", "logit_bias", "user", "content", "role"};

        private BodyMutations() {
        }

        static byte[] mutate(String valid, SplittableRandom random) {
            String body = valid;
            int rounds = 1 + random.nextInt(3);
            for (int i = 0; i < rounds; i++) {
                body = switch (random.nextInt(11)) {
                    case 0 -> body.substring(0, random.nextInt(body.length() + 1)); // truncated
                    case 1 -> replaceValue(body, random, WRONG_VALUES[random.nextInt(WRONG_VALUES.length)]);
                    case 2 -> addField(body, random, WRONG_VALUES[random.nextInt(WRONG_VALUES.length)]);
                    case 3 -> replaceValue(body, random, "\"" + "z".repeat(1 + random.nextInt(1_200_000)) + "\"");
                    case 4 -> replaceValue(body, random, "[" + "7,".repeat(random.nextInt(300_000)) + "7]");
                    case 5 -> replaceValue(body, random, "[".repeat(1 + random.nextInt(3000))
                            + "]".repeat(random.nextInt(3000)));
                    case 6 -> insertAt(body, random, String.valueOf((char) random.nextInt(0x80)));
                    case 7 -> addField(body, random, "\"" + "q".repeat(random.nextInt(64)) + "\""); // a repeat or unknown
                    case 8 -> random.nextInt(4) == 0 ? "" : "[" + body + "]";
                    case 9 -> body + " ".repeat(2_200_000); // past the 2 MB limit
                    default -> body;
                };
            }
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            if (random.nextInt(12) == 0 && bytes.length > 0) { // invalid UTF-8
                bytes[random.nextInt(bytes.length)] = (byte) (0x80 + random.nextInt(0x80));
            }
            return bytes;
        }

        /** The value after a random field's colon replaced by {@code value} (up to the next comma or brace). */
        private static String replaceValue(String body, SplittableRandom random, String value) {
            int colon = nth(body, ':', random);
            if (colon < 0) {
                return value;
            }
            int end = colon + 1;
            int depth = 0;
            boolean quoted = false;
            for (; end < body.length(); end++) {
                char c = body.charAt(end);
                if (c == '"' && body.charAt(end - 1) != '\\') {
                    quoted = !quoted;
                } else if (!quoted && (c == '[' || c == '{')) {
                    depth++;
                } else if (!quoted && (c == ']' || c == '}')) {
                    if (depth-- == 0) {
                        break;
                    }
                } else if (!quoted && c == ',' && depth == 0) {
                    break;
                }
            }
            return body.substring(0, colon + 1) + " " + value + body.substring(end);
        }

        private static String addField(String body, SplittableRandom random, String value) {
            int brace = body.indexOf('{');
            String field = "\"" + FIELDS[random.nextInt(FIELDS.length)] + "\": " + value + ", ";
            return brace < 0 ? "{" + field + "\"x\": 1}" : body.substring(0, brace + 1) + field + body.substring(brace + 1);
        }

        private static String insertAt(String body, SplittableRandom random, String s) {
            int at = random.nextInt(body.length() + 1);
            return body.substring(0, at) + s + body.substring(at);
        }

        private static int nth(String body, char c, SplittableRandom random) {
            long count = body.chars().filter(x -> x == c).count();
            if (count == 0) {
                return -1;
            }
            long n = random.nextLong(count);
            int at = -1;
            for (long k = 0; k <= n; k++) {
                at = body.indexOf(c, at + 1);
            }
            return at;
        }
    }
}
