package io.butterfly.cli.client;

import io.butterfly.cli.command.Commands;
import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.http.PlainHttp;
import io.butterfly.cli.http.ResumableStream;
import io.butterfly.cli.reference.WholeModelCheck;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.IntStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import tools.jackson.databind.JsonNode;

/**
 * {@code generate}: runs a prompt on the cluster ({@code POST /api/v1/inference}, or {@code /inference/stream}
 * printing the answer as it comes) and prints the answer, its tokens and timings. With {@code --compare-whole}
 * (the demo) it also decodes the prompt with the whole model in this process and says whether the cluster's
 * tokens are the same.
 */
@Command(name = "generate", description = "run a prompt on the cluster")
public final class GenerateCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "TEXT", arity = "1..*", description = "the prompt (its words joined by spaces)")
    List<String> prompt = new ArrayList<>();

    @Option(names = "--max-tokens", paramLabel = "N", description = "tokens to generate (default 32)")
    int maxTokens = 32;

    @Option(names = "--temperature", paramLabel = "T", description = "0 (default): greedy")
    double temperature;

    @Option(names = "--top-p", paramLabel = "P", description = "nucleus sampling")
    Double topP;

    @Option(names = "--top-k", paramLabel = "K", description = "the K most likely tokens only (0: off)")
    Integer topK;

    @Option(names = "--seed", paramLabel = "S", description = "sampling seed (default 0)")
    long seed;

    @Option(names = "--logprobs", paramLabel = "K", description = "print each token's logprob and the K most likely")
    Integer logprobs;

    @Option(names = "--stop", paramLabel = "STR", description = "stop before this text")
    String stop;

    @Option(names = "--json", arity = "0", description = "print the response as JSON")
    boolean json;

    @Option(names = "--stream", arity = "0", description = "print the answer as it is generated")
    boolean stream;

    @Option(names = "--url", paramLabel = "URL", hidden = true, description = "the coordinator (default: this machine's)")
    String url;

    @Option(names = "--compare-whole", paramLabel = "MODEL_DIR", hidden = true,
            description = "decode greedily with the whole model in this process and compare")
    Path compareWhole;

    @Option(names = "--threads", paramLabel = "N", hidden = true, description = "engine threads of --compare-whole")
    int threads = 1;

    @Override
    public Integer call() throws IOException {
        if (compareWhole != null && json) {
            throw Commands.usageError(spec, "--compare-whole prints its verdict as text: it cannot be combined with --json");
        }
        if (json && stream) {
            throw Commands.usageError(spec, "--stream prints the answer as it comes: it cannot be combined with --json");
        }
        String coordinator = StatusCommand.coordinatorUrl(url);
        try {
            return generate(coordinator, requestBody());
        } catch (ConnectException e) {
            return StatusCommand.noCoordinator(spec, coordinator);
        }
    }

    private Map<String, Object> requestBody() {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("prompt", String.join(" ", prompt));
        body.put("max_tokens", maxTokens);
        body.put("temperature", temperature);
        body.put("seed", seed);
        if (topP != null) {
            body.put("top_p", topP);
        }
        if (topK != null) {
            body.put("top_k", topK);
        }
        if (logprobs != null) {
            body.put("logprobs", logprobs);
        }
        if (stop != null) {
            body.put("stop", List.of(stop));
        }
        return body;
    }

    private int generate(String coordinator, Map<String, Object> body) throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        JsonNode r;
        if (stream) {
            out.println("prompt:  " + body.get("prompt"));
            r = stream(coordinator, body);
            if (r == null) {
                return 1;
            }
        } else {
            PlainHttp.Response response = PlainHttp.postJson(coordinator + "/api/v1/inference",
                    StatusCommand.JSON.writeValueAsString(body), Duration.ofMinutes(10));
            r = StatusCommand.JSON.readTree(response.body());
            if (response.status() != 200) {
                err.println("HTTP " + response.status() + ": " + StatusCommand.JSON.writeValueAsString(r));
                return 1;
            }
            if (json) {
                out.println(StatusCommand.JSON.writeValueAsString(r));
                return 0;
            }
            out.println("prompt:  " + body.get("prompt"));
            out.println("answer:  " + r.path("text").asString());
        }
        out.println("tokens:  " + r.path("token_ids"));
        if (logprobs != null && logprobs > 0) {
            LogprobsTable.render(r).forEach(out::println);
        }
        JsonNode t = r.path("timings");
        out.flush(); // the answer first; the figures about it are stats, on stderr
        err.printf("%d prompt + %d generated tokens, finish_reason=%s, time to first token %.1f ms, decode %.1f tokens/s%n",
                r.path("usage").path("prompt_tokens").asInt(), r.path("usage").path("completion_tokens").asInt(),
                r.path("finish_reason").asString(), t.path("time_to_first_token_ms").asDouble(),
                t.path("decode_tokens_per_second").asDouble());
        err.flush();
        return compareWhole == null ? 0 : compareWhole(r);
    }

    /**
     * Runs the generation through {@code POST /api/v1/inference/stream}, printing the answer's text as each token
     * settles it; returns the final answer (the {@code done} event), or null after printing what went wrong. A stream
     * that breaks (its coordinator died, or stopped) is picked up at another replica with {@code Last-Event-ID}.
     */
    private JsonNode stream(String coordinator, Map<String, Object> body) throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        JsonNode[] done = new JsonNode[1];
        boolean[] failed = new boolean[1];
        boolean[] started = new boolean[1]; // "answer:" only once the stream has begun, not before a refusal
        List<String> replicas = url != null ? List.of() : coordinatorReplicas();
        ResumableStream stream = new ResumableStream(ResumableStream.at(coordinator, replicas, "/api/v1/inference/stream"),
                Duration.ofMinutes(10), Duration.ofMinutes(2), notice -> {
                    err.println(System.lineSeparator() + "[butterfly] " + notice);
                    err.flush();
                });
        ResumableStream.Outcome response = stream.post(StatusCommand.JSON.writeValueAsString(body), (name, data) -> {
                    JsonNode event = StatusCommand.JSON.readTree(data);
                    switch (name) {
                        case "token" -> {
                            if (!started[0]) {
                                started[0] = true;
                                out.print("answer:  ");
                            }
                            out.print(event.path("text").asString());
                            out.flush();
                        }
                        case "done" -> done[0] = event;
                        case "error" -> {
                            done[0] = null;
                            failed[0] = true;
                            err.println(System.lineSeparator() + "the generation failed: "
                                    + StatusCommand.JSON.writeValueAsString(event));
                        }
                        default -> { } // an event this client does not know: ignored, as the format wants
                    }
                });
        if (started[0]) {
            out.println();
        }
        if (response.status() != 200) {
            err.println("HTTP " + response.status() + ": " + response.body());
            return null;
        }
        if (done[0] == null && !failed[0]) {
            err.println("the stream ended without an answer");
        }
        if (done[0] != null && !started[0]) {
            out.println("answer:  " + done[0].path("text").asString()); // no tokens were generated
        }
        return done[0];
    }

    /** The HTTP addresses of the coordinator replicas {@code up --coordinators 3} starts here. */
    private static List<String> coordinatorReplicas() {
        PortLayout layout = PortLayout.fromEnvironment();
        return IntStream.range(0, 3).mapToObj(i -> "http://127.0.0.1:" + layout.coordinatorHttp(i)).toList();
    }

    /** Decodes the same prompt greedily with the whole model in this process: are the cluster's tokens the same? */
    private int compareWhole(JsonNode r) throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        if (temperature != 0) {
            out.println("whole model, one process: not compared (only a greedy answer, temperature 0, is)");
            return 0;
        }
        long[] promptIds = longs(r.path("prompt_token_ids"));
        long[] cluster = longs(r.path("token_ids"));
        long[] whole = WholeModelCheck.greedy(compareWhole, promptIds, cluster.length, threads);
        for (int i = 0; i < cluster.length; i++) {
            if (cluster[i] != whole[i]) {
                out.printf("whole model, one process: DIFFERENT at generated token %d: cluster %d, whole model %d%n", i,
                        cluster[i], whole[i]);
                return 1;
            }
        }
        out.printf("whole model, one process: the same %d tokens%n", cluster.length);
        return 0;
    }

    private static long[] longs(JsonNode array) {
        long[] out = new long[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asLong();
        }
        return out;
    }
}
