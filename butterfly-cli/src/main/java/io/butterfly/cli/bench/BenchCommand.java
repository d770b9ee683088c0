package io.butterfly.cli.bench;

import io.butterfly.common.api.WorkerStatus;
import io.butterfly.common.api.ApiJson;
import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.command.CommandFailedException;
import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.generate.GenerateModelCommand;
import io.butterfly.cli.reference.PlainDjlLoop;
import io.butterfly.common.gguf.GgufExport;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.engine.RooflineProbe;
import java.io.IOException;
import java.io.PrintWriter;
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
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code bench}: decode tokens/s of one model (a) in a plain in-process DJL loop, (b) in a cluster with one worker
 * and (c) split over N worker processes, all measured in the same run.
 *
 * <p>Both clusters run at the same time (each under its own state directory and port offset) and the three are
 * measured in interleaved rounds, so a burst of load from elsewhere on the machine hits all three alike; each figure
 * is the median over the rounds. The last line is {@code ratio=X.XX}: the median over the rounds of (c) / (b)
 * measured in the same round. The plain loop runs in this JVM, which ./butterfly starts with the services' JIT for
 * this command.
 *
 * <p>With {@code --compare-insecure} a third cluster, the split one again with TLS off, runs in the same rounds (it
 * and the TLS one take turns going first), and the last line is {@code tls_ratio=X.XX}: the median over the rounds of
 * the split cluster's decode tokens/s with mutual TLS (the default) over those without.
 *
 * <p>With {@code --weights q8|q4|q4_k} both clusters serve the model quantized on import (the plain loop stays the
 * float32 DJL baseline), and the roofline counts the bytes the quantized weights take. With {@code --peer} llama.cpp
 * (its prebuilt CPU build, {@link LlamaCppPeer}) decodes the same model written as a GGUF file in the same types, in
 * the same rounds, and {@code peer_ratio=X.XX} is the median of the paired ratios one worker / llama.cpp.
 */
@Command(name = "bench", description = "decode tokens/s: plain loop, 1 worker, N workers")
public final class BenchCommand implements Callable<Integer> {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final int PROMPT_TOKENS = 16;
    private static final int PREFILL_TOKENS = 512;
    /** Matrices the read bandwidth streams through: several times any last-level cache. */
    static final int READ_MIB = 512;

    @Spec
    CommandSpec spec;

    @Option(names = "--workers", paramLabel = "N", description = "workers of the split cluster (default 3)")
    int workers = 3;

    @Option(names = "--model", paramLabel = "DIR", description = "default: the generated bench-100m model (~100M parameters)")
    Path model;

    @Option(names = "--tokens", paramLabel = "N", description = "tokens decoded per measurement (default 64)")
    int tokens = 64;

    @Option(names = "--rounds", paramLabel = "R", description = "measured rounds (default 5)")
    int rounds = 5;

    /**
     * Unmeasured runs first, for at least this long: the per-step path (gRPC, protobuf, codec, DJL calls) runs a few
     * dozen times a second, and the JIT needs a few thousand steps to compile it (a fresh one-worker Q4 cluster on a
     * Xeon went from 33 to a steady 55-75 tokens/s over its first 40 requests of 64 tokens; `profile` after 5 s of
     * warm-up 19.5 ms a token, after 150 s 13.1). The plain loop and
     * llama.cpp take part in the first two rounds only: the plain loop decodes at a fraction of the clusters' speed
     * and would otherwise take most of the warm-up from them.
     */
    @Option(names = "--warmup-seconds", paramLabel = "S", description = "unmeasured rounds first, at least this long"
            + " and then until the services' JIT compilers have settled (at most 4x as long; default 180)")
    int warmupSeconds = 180;

    /** The warm-up goes on past --warmup-seconds while the JIT compilers have not settled, up to this many times it. */
    private static final int WARMUP_CAP_FACTOR = 4;

    @Option(names = "--compare-insecure", description = "also run the split cluster with TLS off in the same rounds;"
            + " prints tls_ratio: its decode tokens/s with mutual TLS over without (median of the paired rounds)")
    boolean compareInsecure;

    @Option(names = "--weights", paramLabel = "f32|q8|q4|q4_k", description = "the clusters' weights: float32 (default)"
            + " or quantized on import (q8: Q8_0, q4: Q4_0 with a Q6_K head, q4_k: Q4_K_M)")
    String weights = "f32";

    @Option(names = "--peer", description = "also measure llama.cpp (node-llama-cpp's prebuilt CPU build, installed from"
            + " the npm registry the first time) on the same model as a GGUF file of the same types, in the same rounds;"
            + " prints peer_ratio: one worker's decode tokens/s over llama.cpp's (median of the paired rounds)")
    boolean peer;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        ButterflyHome home = ButterflyHome.fromEnvironment();
        int portOffset = PortLayout.fromEnvironment().offset();
        Path dir = model(model, home, out, spec.commandLine().getErr());
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        WeightQuantization quantization = weights.equalsIgnoreCase("f32") ? null : WeightQuantization.byId(weights)
                .orElseThrow(() -> new CommandFailedException("--weights " + weights + " is not one of f32, q8, q4, q4_k"));
        long[] prompt = LongStream.range(0, PROMPT_TOKENS).map(i -> (i * 7919 + 13) % config.vocabSize()).toArray();
        out.printf("model %s: %s, %d layers, hidden %d, %,d parameters; prompt %d tokens, decode %d tokens;"
                        + " >= %d s of warm-up, median of %d interleaved rounds%n",
                dir.getFileName(), config.architecture().id(), config.numLayers(), config.hiddenSize(),
                config.parameterCount(), PROMPT_TOKENS, tokens, warmupSeconds, rounds);

        // Port offsets 700 and 800 keep the two clusters apart from each other and from a cluster on the offset.
        String quantize = quantization == null ? null : quantization.id();
        Cluster one = new Cluster(new Launcher(home.withState(home.state().resolve("bench/one-worker")),
                PortLayout.withOffset(portOffset + 700)), 1, false, quantize);
        Cluster many = new Cluster(new Launcher(home.withState(home.state().resolve("bench/" + workers + "-workers")),
                PortLayout.withOffset(portOffset + 800)), workers, false, quantize);
        // 900: the split cluster once more, with TLS off
        Cluster plaintext = !compareInsecure ? null : new Cluster(new Launcher(home.withState(
                home.state().resolve("bench/" + workers + "-workers-insecure")), PortLayout.withOffset(portOffset + 900)),
                workers, true, quantize);
        LlamaCppPeer llama = null;
        try (PlainDjlLoop plainLoop = PlainDjlLoop.load(dir, new ExecutorOptions("auto", 0))) {
            one.start(dir, out);
            many.start(dir, out);
            if (plaintext != null) {
                plaintext.start(dir, out);
            }
            out.printf("engine threads per worker: 1 worker %d, %d workers %d (each cluster as `up` starts it); weights %s%n",
                    one.engineThreads(), workers, many.engineThreads(), one.projections());
            if (peer) {
                Path gguf = gguf(dir, quantization, out);
                llama = LlamaCppPeer.start(home.state().resolve("peer"), gguf, one.engineThreads(), tokens, prompt);
                out.printf("llama.cpp: %s on %s%n", llama.description(), gguf.getFileName());
            }
            String body = requestBody(prompt, tokens);
            long start = System.nanoTime();
            long warmupEnd = start + warmupSeconds * 1_000_000_000L;
            long warmupCap = start + WARMUP_CAP_FACTOR * warmupSeconds * 1_000_000_000L;
            List<String> services = new ArrayList<>(one.serviceUrls());
            services.addAll(many.serviceUrls());
            if (plaintext != null) {
                services.addAll(plaintext.serviceUrls());
            }
            JitSettling jit = new JitSettling(services);
            jit.skip();
            int warmupRounds = 0;
            while (warmupRounds < 2 || System.nanoTime() < warmupEnd
                    || !jit.settled() && System.nanoTime() < warmupCap) {
                if (warmupRounds < 2) {
                    plainLoop.generate(prompt, tokens);
                    if (llama != null) {
                        llama.decodeTokensPerSecond();
                    }
                    jit.skip(); // the plain loop's and llama.cpp's time would dilute the services' share
                }
                one.decodeTokensPerSecond(body);
                many.decodeTokensPerSecond(body);
                if (plaintext != null) {
                    plaintext.decodeTokensPerSecond(body);
                }
                jit.roundEnded();
                warmupRounds++;
            }
            out.printf("warm-up: %d rounds, %.0f s; the services' JIT compilers took %.1f%% of the last %d rounds' time"
                            + " (%s)%n", warmupRounds, (System.nanoTime() - start) / 1e9, 100 * jit.recentShare(),
                    JitSettling.WINDOW, jit.settled() ? "settled: at most " + Math.round(100 * JitSettling.SETTLED_SHARE)
                            + "%" : "not settled after " + WARMUP_CAP_FACTOR + "x --warmup-seconds");
            double[] plain = new double[rounds];
            double[] single = new double[rounds];
            double[] split = new double[rounds];
            double[] insecure = new double[rounds];
            double[] peers = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                plain[r] = plainLoop.generate(prompt, tokens).decodeTokensPerSecond();
                if (llama != null && r % 2 == 0) { // llama.cpp and the one worker take turns going first
                    peers[r] = llama.decodeTokensPerSecond();
                }
                single[r] = one.decodeTokensPerSecond(body);
                if (llama != null && r % 2 == 1) {
                    peers[r] = llama.decodeTokensPerSecond();
                }
                if (plaintext != null && r % 2 == 1) { // the TLS and plaintext clusters take turns going first
                    insecure[r] = plaintext.decodeTokensPerSecond(body);
                }
                split[r] = many.decodeTokensPerSecond(body);
                if (plaintext != null && r % 2 == 0) {
                    insecure[r] = plaintext.decodeTokensPerSecond(body);
                }
                out.printf("round %d: plain %.2f, 1 worker %.2f, %d workers %.2f tokens/s%s%s%n", r + 1, plain[r],
                        single[r], workers, split[r], plaintext == null ? "" : String.format(", %d workers without TLS"
                                + " %.2f", workers, insecure[r]),
                        llama == null ? "" : String.format(", llama.cpp %.2f", peers[r]));
            }
            double p = Stats.median(plain);
            double s = Stats.median(single);
            double m = Stats.median(split);
            // Each round measures all three back to back, so a ratio within a round compares them under the
            // same load; the median of those paired ratios is what the last line reports.
            double[] singleVsPlain = new double[rounds];
            double[] splitVsSingle = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                singleVsPlain[r] = single[r] / plain[r];
                splitVsSingle[r] = split[r] / single[r];
            }
            out.printf("plain in-process DJL loop:  %8.2f tokens/s%n", p);
            out.printf("cluster, 1 worker:          %8.2f tokens/s  (%.2fx the plain loop; paired %.2fx)%n",
                    s, s / p, Stats.median(singleVsPlain));
            out.printf("cluster, %d workers:         %8.2f tokens/s  (%.2fx one worker; paired %.2fx)%n",
                    workers, m, m / s, Stats.median(splitVsSingle));
            out.printf("per-round ratios %d workers / 1 worker: %s%n", workers, Arrays.stream(splitVsSingle)
                    .mapToObj(x -> String.format("%.2f", x)).collect(Collectors.joining(" ")));
            roofline(config, quantization, s, one, out);
            if (llama != null) {
                double[] singleVsPeer = new double[rounds];
                for (int r = 0; r < rounds; r++) {
                    singleVsPeer[r] = single[r] / peers[r];
                }
                out.printf("llama.cpp (%s): %8.2f tokens/s  (one worker %.2fx; paired %.2fx)%n", llama.description(),
                        Stats.median(peers), s / Stats.median(peers), Stats.median(singleVsPeer));
                out.printf("per-round ratios 1 worker / llama.cpp: %s%n", Arrays.stream(singleVsPeer)
                        .mapToObj(x -> String.format("%.2f", x)).collect(Collectors.joining(" ")));
                out.printf("peer_ratio=%.2f%n", Stats.median(singleVsPeer));
            }
            out.printf("ratio=%.2f%n", Stats.median(splitVsSingle));
            if (plaintext != null) {
                double[] tlsVsPlaintext = new double[rounds];
                for (int r = 0; r < rounds; r++) {
                    tlsVsPlaintext[r] = split[r] / insecure[r];
                }
                out.printf("cluster, %d workers, TLS off: %8.2f tokens/s  (with mutual TLS %.2fx; paired %.2fx)%n",
                        workers, Stats.median(insecure), m / Stats.median(insecure), Stats.median(tlsVsPlaintext));
                out.printf("per-round ratios mutual TLS / TLS off: %s%n", Arrays.stream(tlsVsPlaintext)
                        .mapToObj(x -> String.format("%.2f", x)).collect(Collectors.joining(" ")));
                out.printf("tls_ratio=%.2f%n", Stats.median(tlsVsPlaintext));
            }
        } finally {
            if (llama != null) {
                llama.close();
            }
            if (plaintext != null) {
                plaintext.launcher.down();
            }
            many.launcher.down();
            one.launcher.down();
        }
        return 0;
    }

    /**
     * The one worker's decode and prefill against what this machine's engine attains: read bandwidth and matmul rate,
     * measured here (the clusters idle) with the engine threads a lone worker gets.
     */
    private void roofline(ModelConfig config, WeightQuantization quantization, double workerTokensPerSecond, Cluster one,
                          PrintWriter out) throws IOException, InterruptedException {
        RooflineProbe.Rates rates = RooflineProbe.measure(READ_MIB, 2_000_000_000L);
        Roofline model = new Roofline(config, Float.BYTES, quantization);
        int context = PROMPT_TOKENS + tokens / 2; // the mean cached positions of a decode step
        long bytes = model.decodeBytes(context);
        double decodeBound = model.decodeBound(rates.readGbps(), context);
        out.printf("roofline (engine, %d threads): read %.1f GB/s (matrix-vector products over %d MiB), matmul %.1f"
                + " GFLOP/s (%d x %d float32)%n", rates.threads(), rates.readGbps(), rates.readBytes() >> 20,
                rates.matmulGflops(), 1024, 1024);
        out.printf("decode: %.1f MB read per token (%d cached positions on average), bound %.1f tokens/s; one worker"
                + " %.2f tokens/s%n", bytes / 1e6, context, decodeBound, workerTokensPerSecond);
        out.printf("roofline_fraction=%.2f%n", workerTokensPerSecond / decodeBound);
        long[] prompt = LongStream.range(0, PREFILL_TOKENS).map(i -> (i * 7919 + 13) % config.vocabSize()).toArray();
        double[] ttft = new double[3];
        for (int i = 0; i < ttft.length; i++) {
            ttft[i] = one.timeToFirstTokenMs(requestBody(prompt, 1));
        }
        double prefill = PREFILL_TOKENS * 1000 / Stats.median(ttft);
        double prefillBound = model.prefillBound(rates.matmulGflops(), PREFILL_TOKENS);
        out.printf("prefill of %d tokens on one worker: %.1f tokens/s (time to first token, median of %d: %.0f ms);"
                        + " %.2f GFLOP per token, bound %.1f tokens/s%n", PREFILL_TOKENS, prefill, ttft.length,
                Stats.median(ttft), model.prefillFlops(PREFILL_TOKENS) / PREFILL_TOKENS / 1e9, prefillBound);
        out.printf("prefill_fraction=%.2f%n", prefill / prefillBound);
    }

    /** The model as a GGUF file of the same types, for llama.cpp: written beside the model the first time. */
    static Path gguf(Path dir, WeightQuantization quantization, PrintWriter out) throws IOException {
        Path file = dir.resolveSibling(dir.getFileName() + "-" + (quantization == null ? "f32" : quantization.id()) + ".gguf");
        if (!Files.exists(file) || Files.getLastModifiedTime(file).compareTo(
                Files.getLastModifiedTime(dir.resolve("model.safetensors"))) < 0) {
            out.println("writing " + file + " for llama.cpp");
            GgufExport.write(dir, file, quantization);
        }
        return file;
    }

    /** {@code model}, or the generated bench-100m model when null (generated the first time); absolute. */
    static Path model(Path model, ButterflyHome home, PrintWriter out, PrintWriter err) {
        Path dir = model != null ? model : home.model("bench-100m");
        if (!Files.exists(dir.resolve("model.safetensors"))) {
            out.println("generating the benchmark model (~100M parameters) in " + dir);
            GenerateModelCommand.generatePreset("bench-100m", dir, out, err);
        }
        return dir.toAbsolutePath();
    }

    /** A greedy request for {@code tokens} tokens after {@code prompt}, end-of-sequence ignored. */
    static String requestBody(long[] prompt, int tokens) {
        return "{\"token_ids\": " + Arrays.stream(prompt).mapToObj(Long::toString)
                .collect(Collectors.joining(", ", "[", "]")) + ", \"max_tokens\": " + tokens
                + ", \"temperature\": 0, \"ignore_eos\": true}";
    }

    /** A cluster under its own state directory and port offset. */
    private static final class Cluster {
        private final Launcher launcher;
        private final int workers;
        private final boolean insecure;
        private final String quantize;
        private final HttpClient http = HttpClient.newHttpClient();

        Cluster(Launcher launcher, int workers, boolean insecure, String quantize) {
            this.launcher = launcher;
            this.workers = workers;
            this.insecure = insecure;
            this.quantize = quantize;
        }

        void start(Path model, PrintWriter progress) {
            launcher.up(UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE).withWorkers(workers).withModel(model).withInsecure(insecure)
                    .withQuantize(quantize), progress);
        }

        /** Each service's HTTP base URL but the registry's and discovery's (no request passes through them). */
        List<String> serviceUrls() {
            List<String> urls = new ArrayList<>();
            urls.add(launcher.ports().coordinatorUrl());
            for (int i = 0; i < workers; i++) {
                urls.add("http://127.0.0.1:" + launcher.ports().workerHttp(i));
            }
            return urls;
        }

        /** What the first worker's projections compute with (e.g. "native Q4_0+Q6_K (avx2)"). */
        String projections() throws IOException, InterruptedException {
            String projections = firstWorker().projections();
            return projections == null ? "?" : projections;
        }

        /** The intra-op threads the first worker computes with (the launcher gives each worker the same). */
        int engineThreads() throws IOException, InterruptedException {
            return firstWorker().engineThreads();
        }

        private WorkerStatus firstWorker() throws IOException, InterruptedException {
            URI uri = URI.create("http://127.0.0.1:" + launcher.ports().workerHttp(0) + "/api/v1/worker/state");
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            return ApiJson.reader().readValue(r.body(), WorkerStatus.class);
        }

        /** A request's time to its first token, milliseconds. */
        double timeToFirstTokenMs(String body) throws IOException, InterruptedException {
            return infer(body).path("timings").path("time_to_first_token_ms").asDouble();
        }

        double decodeTokensPerSecond(String body) throws IOException, InterruptedException {
            return infer(body).path("timings").path("decode_tokens_per_second").asDouble();
        }

        private JsonNode infer(String body) throws IOException, InterruptedException {
            URI uri = URI.create(launcher.ports().coordinatorUrl() + "/api/v1/inference");
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri)
                    .header("Content-Type", "application/json").timeout(Duration.ofMinutes(10))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("inference on " + workers + " worker(s) failed: HTTP " + r.statusCode() + " " + r.body());
            }
            return JSON.readTree(r.body());
        }
    }
}
