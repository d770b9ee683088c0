package io.butterfly.worker.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The launcher's client side: waits for READY (with per-worker load progress), shows the state and
 * runs a generation against the coordinator's REST API.
 */
public final class ButterflyCli {

    private static final JsonMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();
    private static final String GENERATE_USAGE =
            "usage: generate TEXT [--max-tokens N] [--temperature T] [--top-p P] [--top-k K] [--seed S] [--logprobs K] [--stop STR] [--json | --stream]";
    /** The options each command accepts; anything else is a usage error. */
    private static final Map<String, Args.Spec> COMMANDS = Map.of(
            "wait-ready", new Args.Spec("wait-ready", Set.of("url", "timeout"), Set.of()),
            "status", new Args.Spec("status", Set.of("url"), Set.of()),
            "generate", new Args.Spec("generate",
                    Set.of("url", "max-tokens", "temperature", "top-p", "top-k", "seed", "logprobs", "stop", "compare-whole", "threads"),
                    Set.of("json", "stream")));

    private final PrintStream out;
    private final PrintStream err;

    ButterflyCli(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    public static void main(String[] args) throws Exception {
        System.exit(new ButterflyCli(System.out, System.err).run(args));
    }

    int run(String[] args) throws Exception {
        Args.Spec spec = args.length == 0 ? null : COMMANDS.get(args[0]);
        if (spec == null) {
            err.println(args.length == 0 ? "usage: ButterflyCli wait-ready|status|generate [--url URL] ..."
                    : "unknown command " + args[0]);
            return 2;
        }
        String url = "http://127.0.0.1:8080";
        try {
            Args a = Args.parse(args, 1, spec);
            url = a.option("url", url);
            return switch (args[0]) {
                case "wait-ready" -> waitReady(url, a.longOption("timeout", 600));
                case "status" -> status(url);
                default -> generate(url, a);
            };
        } catch (Args.UsageException e) {
            return Args.usageError(e, err);
        } catch (java.net.ConnectException e) {
            err.println("no coordinator answers at " + url + " (start a cluster with ./butterfly up)");
            return 1;
        }
    }

    /** Workers that joined but are not stages of the pipeline. */
    static List<String> idleWorkers(JsonNode state) {
        Set<String> stages = new HashSet<>();
        state.path("pipeline").forEach(p -> stages.add(p.asString()));
        List<String> idle = new ArrayList<>();
        for (JsonNode n : state.path("nodes")) {
            if ("worker".equals(n.path("role").asString()) && !stages.contains(n.path("id").asString())) {
                idle.add(n.path("id").asString());
            }
        }
        return idle;
    }

    int waitReady(String url, long timeoutSeconds) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutSeconds * 1_000_000_000L;
        Map<String, String> shown = new LinkedHashMap<>();
        while (System.nanoTime() < deadline) {
            JsonNode state;
            try {
                state = get(url + "/api/v1/system/state");
            } catch (IOException e) {
                Thread.sleep(500);
                continue;
            }
            for (JsonNode n : state.path("nodes")) {
                if (!"worker".equals(n.path("role").asString())) {
                    continue;
                }
                String line = progressLine(n);
                String id = n.path("id").asString();
                if (!line.equals(shown.get(id))) {
                    shown.put(id, line);
                    out.println(line);
                }
                if (n.has("error")) {
                    out.println("worker " + id + " failed: " + n.path("error").path("code").asString() + ": "
                            + n.path("error").path("message").asString());
                    return 1;
                }
            }
            JsonNode feasibility = state.path("feasibility");
            if (feasibility.isObject() && !feasibility.path("feasible").asBoolean(true)) {
                out.println("the cluster cannot hold the model: " + feasibility.path("reason").asString());
                return 1;
            }
            JsonNode validation = state.path("weight_validation");
            if (validation.isObject() && "INVALID".equals(validation.path("status").asString())) {
                out.println("weights failed cross-validation: " + validation.path("problems"));
                return 1;
            }
            if ("READY".equals(state.path("system_state").asString())) {
                out.printf("READY: model %s on %d worker(s), epoch %d, merkle root %s%n",
                        state.path("model_id").asString(), state.path("pipeline").size(),
                        state.path("epoch").asLong(), state.path("merkle_root").asString());
                List<String> idle = idleWorkers(state);
                if (!idle.isEmpty()) {
                    // More workers than layers (or than the plan could use): say so rather than let them look lost.
                    out.printf("note: %s hold%s no layers: the plan used %d of %d worker(s)%n", String.join(", ", idle),
                            idle.size() == 1 ? "s" : "", state.path("pipeline").size(),
                            state.path("pipeline").size() + idle.size());
                }
                return 0;
            }
            Thread.sleep(100); // `up` returns (and bench-load stops its clock) within ~0.1 s of READY
        }
        out.println("timed out waiting for READY");
        return 1;
    }

    private static String progressLine(JsonNode n) {
        double p = n.path("progress").asDouble();
        int width = 20;
        int filled = (int) Math.round(p * width);
        String bar = "#".repeat(filled) + ".".repeat(width - filled);
        JsonNode range = n.path("layer_range");
        String layers = range.isArray() ? "layers [" + range.get(0).asInt() + ", " + range.get(1).asInt() + ")" : "unassigned";
        JsonNode eta = n.path("load").path("estimated_completion_secs");
        String etaText = eta.isNumber() && eta.asDouble() > 0 ? String.format(" ETA %.0fs", eta.asDouble()) : "";
        return String.format("  %-10s %-18s [%s] %3d%% %s%s", n.path("id").asString(), layers, bar, Math.round(p * 100),
                n.path("partition_state").asString(), etaText);
    }

    int status(String url) throws IOException {
        out.println(JSON.writeValueAsString(get(url + "/api/v1/system/state")));
        return 0;
    }

    int generate(String url, Args a) throws IOException {
        if (a.positional().isEmpty()) {
            err.println(GENERATE_USAGE);
            return 2;
        }
        // Every option is read before the request is sent, so a malformed number fails fast as a usage error.
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("prompt", String.join(" ", a.positional()));
        body.put("max_tokens", a.intOption("max-tokens", 32));
        body.put("temperature", a.doubleOption("temperature", 0));
        body.put("seed", a.longOption("seed", 0));
        if (a.has("top-p")) {
            body.put("top_p", a.doubleOption("top-p", 1));
        }
        if (a.has("top-k")) {
            body.put("top_k", a.intOption("top-k", 0));
        }
        int logprobs = a.intOption("logprobs", 0);
        if (a.has("logprobs")) {
            body.put("logprobs", logprobs);
        }
        if (a.has("stop")) {
            body.put("stop", List.of(a.option("stop", "")));
        }
        Path wholeModel = a.has("compare-whole") ? Path.of(a.option("compare-whole", "")) : null;
        if (wholeModel != null && a.has("json")) {
            throw new Args.UsageException("--compare-whole prints its verdict as text: it cannot be combined with --json");
        }
        if (a.has("json") && a.has("stream")) {
            throw new Args.UsageException("--stream prints the answer as it comes: it cannot be combined with --json");
        }
        int wholeThreads = a.intOption("threads", 1);
        JsonNode r;
        if (a.has("stream")) {
            out.println("prompt:  " + body.get("prompt"));
            r = stream(url, body);
            if (r == null) {
                return 1;
            }
        } else {
            PlainHttp.Response response = PlainHttp.postJson(url + "/api/v1/inference", JSON.writeValueAsString(body),
                    Duration.ofMinutes(10));
            r = JSON.readTree(response.body());
            if (response.status() != 200) {
                err.println("HTTP " + response.status() + ": " + JSON.writeValueAsString(r));
                return 1;
            }
            if (a.has("json")) {
                out.println(JSON.writeValueAsString(r));
                return 0;
            }
            out.println("prompt:  " + body.get("prompt"));
            out.println("answer:  " + r.path("text").asString());
        }
        out.println("tokens:  " + r.path("token_ids"));
        if (logprobs > 0) {
            LogprobsTable.render(r).forEach(out::println);
        }
        JsonNode t = r.path("timings");
        out.printf("%d prompt + %d generated tokens, finish_reason=%s, time to first token %.1f ms, decode %.1f tokens/s%n",
                r.path("usage").path("prompt_tokens").asInt(), r.path("usage").path("completion_tokens").asInt(),
                r.path("finish_reason").asString(), t.path("time_to_first_token_ms").asDouble(),
                t.path("decode_tokens_per_second").asDouble());
        return wholeModel == null ? 0 : compareWhole(wholeModel, r, (double) body.get("temperature"), wholeThreads);
    }

    /**
     * Runs the generation through {@code POST /api/v1/inference/stream}, printing the answer's text as each token
     * settles it; returns the final answer (the {@code done} event), or null after printing what went wrong.
     */
    private JsonNode stream(String url, Map<String, Object> body) throws IOException {
        JsonNode[] done = new JsonNode[1];
        boolean[] failed = new boolean[1];
        boolean[] started = new boolean[1]; // "answer:" only once the stream has begun, not before a refusal
        PlainHttp.Response response = PlainHttp.postForEvents(url + "/api/v1/inference/stream",
                JSON.writeValueAsString(body), Duration.ofMinutes(10), (name, data) -> {
                    JsonNode event = JSON.readTree(data);
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
                            err.println(System.lineSeparator() + "the generation failed: " + JSON.writeValueAsString(event));
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

    /** Decodes the same prompt greedily with the whole model in this process and says whether the cluster's tokens are the same. */
    private int compareWhole(Path modelDir, JsonNode r, double temperature, int threads) throws IOException {
        if (temperature != 0) {
            out.println("whole model, one process: not compared (only a greedy answer, temperature 0, is)");
            return 0;
        }
        long[] prompt = longs(r.path("prompt_token_ids"));
        long[] cluster = longs(r.path("token_ids"));
        long[] whole = WholeModelCheck.greedy(modelDir, prompt, cluster.length, threads);
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

    JsonNode get(String url) throws IOException {
        return JSON.readTree(PlainHttp.get(url, Duration.ofSeconds(10)).body());
    }
}
