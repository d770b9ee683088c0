package io.butterfly.worker.cli;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.worker.execution.PlainDjlLoop;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./butterfly bench}: decode tokens/s of one model (a) in a plain in-process DJL loop, (b) in
 * a cluster with one worker and (c) split over N worker processes, all measured in the same run.
 * The last line is {@code ratio=X.XX} = (c) / (b).
 */
public final class BenchCommand {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final int PROMPT_TOKENS = 16;

    public static void main(String[] raw) throws Exception {
        Args args = Args.parse(raw, 0);
        Path launcher = Path.of(args.option("launcher", "./butterfly"));
        Path state = Path.of(args.option("state", ".butterfly"));
        String coordinator = args.option("coordinator", "http://127.0.0.1:8080");
        int workers = Integer.parseInt(args.option("workers", "3"));
        int tokens = Integer.parseInt(args.option("tokens", "64"));
        int repeats = Integer.parseInt(args.option("repeats", "3"));
        // Requests before measuring: the JIT compiles the per-step path (gRPC, codec, DJL calls) on the way.
        int warmup = Integer.parseInt(args.option("warmup", "4"));
        Path model = args.has("model") ? Path.of(args.option("model", "")) : state.resolve("models/bench-100m");
        if (!Files.exists(model.resolve("model.safetensors"))) {
            System.out.println("generating the benchmark model (~100M parameters) in " + model);
            io.butterfly.common.model.generate.GenerateModelCommand.main(new String[]{"--preset", "bench-100m", "--out", model.toString()});
        }
        ModelConfig config = ModelConfig.read(model.resolve("config.json"));
        long[] prompt = LongStream.range(0, PROMPT_TOKENS).map(i -> (i * 7919 + 13) % config.vocabSize()).toArray();
        System.out.printf("model %s: %s, %d layers, hidden %d, %,d parameters; prompt %d tokens, decode %d tokens, %d warm-up runs, best of %d%n",
                model.getFileName(), config.architecture().id(), config.numLayers(), config.hiddenSize(),
                config.parameterCount(), PROMPT_TOKENS, tokens, warmup, repeats);

        double plain = PlainDjlLoop.decodeTokensPerSecond(model, prompt, tokens, warmup, repeats);
        System.out.printf("plain in-process DJL loop:  %8.2f tokens/s%n", plain);

        double one = cluster(launcher, coordinator, model, 1, prompt, tokens, warmup, repeats);
        System.out.printf("cluster, 1 worker:          %8.2f tokens/s  (%.2fx the plain loop)%n", one, one / plain);
        double many = cluster(launcher, coordinator, model, workers, prompt, tokens, warmup, repeats);
        System.out.printf("cluster, %d workers:         %8.2f tokens/s  (%.2fx one worker)%n", workers, many, many / one);
        System.out.printf("ratio=%.2f%n", many / one);
    }

    /** Starts a cluster with {@code workers} worker processes, measures decode tokens/s, stops it. */
    static double cluster(Path launcher, String coordinator, Path model, int workers, long[] prompt, int tokens,
                          int warmup, int repeats) throws Exception {
        run(launcher, "up", "--workers", String.valueOf(workers), "--model", model.toString());
        try {
            HttpClient http = HttpClient.newHttpClient();
            String body = "{\"token_ids\": " + Arrays.stream(prompt).mapToObj(Long::toString)
                    .collect(Collectors.joining(", ", "[", "]")) + ", \"max_tokens\": " + tokens
                    + ", \"temperature\": 0, \"ignore_eos\": true}";
            List<Double> rates = new ArrayList<>();
            for (int i = 0; i < warmup + repeats; i++) {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(coordinator + "/api/v1/inference"))
                        .header("Content-Type", "application/json").timeout(Duration.ofMinutes(10))
                        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() != 200) {
                    throw new IllegalStateException("inference failed: HTTP " + r.statusCode() + " " + r.body());
                }
                JsonNode json = JSON.readTree(r.body());
                if (i >= warmup) {
                    rates.add(json.path("timings").path("decode_tokens_per_second").asDouble());
                }
            }
            return rates.stream().mapToDouble(Double::doubleValue).max().orElse(0);
        } finally {
            run(launcher, "down");
        }
    }

    private static void run(Path launcher, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(launcher.toString());
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed");
        }
    }

    private BenchCommand() {
    }
}
