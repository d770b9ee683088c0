package io.butterfly.worker.cli;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.engine.PlainDjlLoop;
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
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./butterfly bench}: decode tokens/s of one model (a) in a plain in-process DJL loop, (b) in a
 * cluster with one worker and (c) split over N worker processes, all measured in the same run.
 *
 * <p>Both clusters run at the same time (each under its own state directory and port offset) and the
 * three are measured in interleaved rounds, so a burst of load from elsewhere on the machine hits all
 * three alike; each figure is the median over the rounds. The last line is {@code ratio=X.XX}: the median over
 * the rounds of (c) / (b) measured in the same round.
 */
public final class BenchCommand {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final int PROMPT_TOKENS = 16;
    private static final Args.Spec SPEC = new Args.Spec("bench", Set.of("launcher", "state", "port-offset", "workers",
            "model", "tokens", "rounds", "warmup-seconds"), Set.of());

    public static void main(String[] raw) throws Exception {
        Args args;
        int portOffset;
        int workers;
        int tokens;
        int rounds;
        int warmupSeconds;
        try {
            args = Args.parse(raw, 0, SPEC);
            portOffset = args.intOption("port-offset", 0);
            workers = args.intOption("workers", 3);
            tokens = args.intOption("tokens", 64);
            rounds = args.intOption("rounds", 5);
            // Unmeasured interleaved runs first, for at least this long: the per-step path (gRPC, protobuf, codec,
            // DJL calls) runs a few dozen times a second, so the JIT needs about a thousand steps to compile it.
            warmupSeconds = args.intOption("warmup-seconds", 60);
        } catch (Args.UsageException e) {
            System.exit(Args.usageError(e, System.err));
            return;
        }
        Path launcher = Path.of(args.option("launcher", "./butterfly"));
        Path state = Path.of(args.option("state", ".butterfly"));
        Path model = args.has("model") ? Path.of(args.option("model", "")) : state.resolve("models/bench-100m");
        if (!Files.exists(model.resolve("model.safetensors"))) {
            System.out.println("generating the benchmark model (~100M parameters) in " + model);
            io.butterfly.common.model.generate.GenerateModelCommand.main(new String[]{"--preset", "bench-100m", "--out", model.toString()});
        }
        model = model.toAbsolutePath();
        ModelConfig config = ModelConfig.read(model.resolve("config.json"));
        long[] prompt = LongStream.range(0, PROMPT_TOKENS).map(i -> (i * 7919 + 13) % config.vocabSize()).toArray();
        System.out.printf("model %s: %s, %d layers, hidden %d, %,d parameters; prompt %d tokens, decode %d tokens;"
                        + " >= %d s of warm-up, median of %d interleaved rounds%n",
                model.getFileName(), config.architecture().id(), config.numLayers(), config.hiddenSize(),
                config.parameterCount(), PROMPT_TOKENS, tokens, warmupSeconds, rounds);

        // Port offsets 700 and 800 keep the two clusters apart from each other and from a cluster on offset 0.
        Cluster one = new Cluster(launcher, state.resolve("bench/one-worker"), portOffset + 700, 1);
        Cluster many = new Cluster(launcher, state.resolve("bench/" + workers + "-workers"), portOffset + 800, workers);
        try (PlainDjlLoop plainLoop = PlainDjlLoop.load(model, new ExecutorOptions("auto", 0))) {
            one.start(model);
            many.start(model);
            System.out.printf("engine threads per worker: 1 worker %d, %d workers %d (each cluster as `up` starts it)%n",
                    one.engineThreads(), workers, many.engineThreads());
            String body = requestBody(prompt, tokens);
            long warmupEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L;
            int warmupRounds = 0;
            while (warmupRounds < 2 || System.nanoTime() < warmupEnd) {
                plainLoop.generate(prompt, tokens);
                one.decodeTokensPerSecond(body);
                many.decodeTokensPerSecond(body);
                warmupRounds++;
            }
            System.out.printf("warm-up: %d rounds%n", warmupRounds);
            double[] plain = new double[rounds];
            double[] single = new double[rounds];
            double[] split = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                plain[r] = plainLoop.generate(prompt, tokens).decodeTokensPerSecond();
                single[r] = one.decodeTokensPerSecond(body);
                split[r] = many.decodeTokensPerSecond(body);
                System.out.printf("round %d: plain %.2f, 1 worker %.2f, %d workers %.2f tokens/s%n",
                        r + 1, plain[r], single[r], workers, split[r]);
            }
            double p = median(plain);
            double s = median(single);
            double m = median(split);
            // Each round measures all three back to back, so a ratio within a round compares them under the
            // same load; the median of those paired ratios is what the last line reports.
            double[] singleVsPlain = new double[rounds];
            double[] splitVsSingle = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                singleVsPlain[r] = single[r] / plain[r];
                splitVsSingle[r] = split[r] / single[r];
            }
            System.out.printf("plain in-process DJL loop:  %8.2f tokens/s%n", p);
            System.out.printf("cluster, 1 worker:          %8.2f tokens/s  (%.2fx the plain loop; paired %.2fx)%n",
                    s, s / p, median(singleVsPlain));
            System.out.printf("cluster, %d workers:         %8.2f tokens/s  (%.2fx one worker; paired %.2fx)%n",
                    workers, m, m / s, median(splitVsSingle));
            System.out.printf("per-round ratios %d workers / 1 worker: %s%n", workers, Arrays.stream(splitVsSingle)
                    .mapToObj(x -> String.format("%.2f", x)).collect(Collectors.joining(" ")));
            System.out.printf("ratio=%.2f%n", median(splitVsSingle));
        } finally {
            many.stop();
            one.stop();
        }
    }

    private static String requestBody(long[] prompt, int tokens) {
        return "{\"token_ids\": " + Arrays.stream(prompt).mapToObj(Long::toString)
                .collect(Collectors.joining(", ", "[", "]")) + ", \"max_tokens\": " + tokens
                + ", \"temperature\": 0, \"ignore_eos\": true}";
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** A cluster started through the launcher under its own state directory and port offset. */
    private static final class Cluster {
        private final Path launcher;
        private final Path home;
        private final int portOffset;
        private final int workers;
        private final HttpClient http = HttpClient.newHttpClient();

        Cluster(Path launcher, Path home, int portOffset, int workers) {
            this.launcher = launcher;
            this.home = home;
            this.portOffset = portOffset;
            this.workers = workers;
        }

        void start(Path model) throws IOException, InterruptedException {
            run("up", "--workers", String.valueOf(workers), "--model", model.toString());
        }

        void stop() throws IOException, InterruptedException {
            run("down");
        }

        /** The intra-op threads the first worker computes with (the launcher gives each worker the same). */
        int engineThreads() throws IOException, InterruptedException {
            URI uri = URI.create("http://127.0.0.1:" + (8090 + portOffset) + "/api/v1/worker/state");
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            return JSON.readTree(r.body()).path("engine_threads").asInt();
        }

        double decodeTokensPerSecond(String body) throws IOException, InterruptedException {
            URI uri = URI.create("http://127.0.0.1:" + (8080 + portOffset) + "/api/v1/inference");
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri)
                    .header("Content-Type", "application/json").timeout(Duration.ofMinutes(10))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("inference on " + workers + " worker(s) failed: HTTP " + r.statusCode() + " " + r.body());
            }
            JsonNode json = JSON.readTree(r.body());
            return json.path("timings").path("decode_tokens_per_second").asDouble();
        }

        private void run(String... args) throws IOException, InterruptedException {
            List<String> cmd = new ArrayList<>();
            cmd.add(launcher.toString());
            cmd.addAll(List.of(args));
            ProcessBuilder pb = new ProcessBuilder(cmd).inheritIO();
            pb.environment().put("BUTTERFLY_HOME", home.toString());
            pb.environment().put("BUTTERFLY_PORT_OFFSET", String.valueOf(portOffset));
            pb.environment().remove("BUTTERFLY_COORDINATOR_PORT");
            Process p = pb.start();
            if (p.waitFor() != 0) {
                throw new IllegalStateException(String.join(" ", cmd) + " failed (BUTTERFLY_HOME=" + home + ")");
            }
        }
    }

    private BenchCommand() {
    }
}
