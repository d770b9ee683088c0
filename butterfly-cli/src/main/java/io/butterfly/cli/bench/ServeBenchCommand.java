package io.butterfly.cli.bench;

import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.cluster.ExitGuard;
import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.cluster.UpCommand;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.http.PlainHttp;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.worker.engine.RooflineProbe;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalDouble;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.function.IntPredicate;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bench-serve}: serving throughput and latency under concurrent streamed requests, in the manner of vLLM's
 * serving benchmark ({@code benchmarks/benchmark_serving.py}).
 *
 * <p>It starts a cluster as {@code up} does, under its own state directory and port offset (as {@code bench}), and
 * runs a closed loop per concurrency level: c clients, each sending its next streamed request as soon as its last
 * one ended. Every request is greedy, {@code --output-tokens} long (end-of-sequence ignored) after a prompt of
 * {@code --prompt-tokens} token ids drawn from a seeded generator; request i has the same prompt at every level.
 * One line per level; the last line is {@code batching_ratio=X.XX}, output tokens/s at concurrency 16 ÷ at 1.
 *
 * <p>With {@code --pipelines K}, one concurrency level (16) is measured on two clusters of {@code --workers} side by
 * side in paired rounds, as with {@code --pin} (which it may be given too): K pipelines against one
 * (docs/scale-out.md); the last line is {@code pipelines_ratio=X.XX}.
 *
 * <p>With {@code --pin}, every worker runs pinned to a core of its own (a stand-in for separate machines) and one
 * concurrency level (16) is measured on two clusters side by side, alternating in paired rounds: micro-batches in
 * flight through the pipeline (the coordinator's default) against one micro-batch in the pipeline at a time. The
 * last line is {@code overlap_ratio=X.XX}, the median of the rounds' paired ratios.
 */
@Command(name = "bench-serve", description = "serving throughput and latency of concurrent streamed requests per"
        + " concurrency level, batching_ratio last; --pin: micro-batches in flight vs one at a time, overlap_ratio last")
public final class ServeBenchCommand implements Callable<Integer> {

    private static final List<Integer> LEVELS = List.of(1, 4, 16, 32);
    private static final int PINNED_LEVEL = 16;
    private static final String ONE_MICRO_BATCH = "--butterfly.coordinator.engine.micro-batches-in-flight=1";
    private static final Duration REQUEST_TIMEOUT = Duration.ofMinutes(10);

    @Spec
    CommandSpec spec;

    @Option(names = "--workers", defaultValue = "3", paramLabel = "N", description = "workers (default 3)")
    String workers;

    @Option(names = "--model", paramLabel = "DIR", description = "default: the generated bench-100m model (~100M parameters)")
    Path model;

    @Option(names = "--concurrency", split = ",", paramLabel = "C", description = "concurrency levels, each 1-256"
            + " (default 1,4,16,32; with --pin one level, default 16)")
    List<Integer> concurrency;

    @Option(names = "--requests", paramLabel = "N", description = "measured requests per level (default max(16,"
            + " 4 x concurrency): every client sends at least 4, so the ramp-down, when fewer than c are in flight, is"
            + " a small part of the time)")
    Integer requests;

    @Option(names = "--output-tokens", paramLabel = "N", description = "tokens generated per request, 1-1024 (default 64)")
    int outputTokens = 64;

    @Option(names = "--prompt-tokens", paramLabel = "N", description = "prompt length in tokens (default 32)")
    int promptTokens = 32;

    @Option(names = "--seed", paramLabel = "S", description = "seed of the prompts' token ids (default 0)")
    long seed;

    /** As bench's: the per-step path needs about a thousand steps for the JIT to compile it. */
    @Option(names = "--warmup-seconds", paramLabel = "S", description = "unmeasured requests before the first level"
            + " (with --pin, on each cluster), at least this long (default 60); every level also warms up with one"
            + " request per client")
    int warmupSeconds = 60;

    @Option(names = "--pin", description = "pin each worker to a core of its own (taskset) and compare micro-batches"
            + " in flight with one at a time, at one concurrency level")
    boolean pin;

    @Option(names = "--pipelines", paramLabel = "K", description = "compare K pipelines over the --workers (each a"
            + " whole copy of the model; docs/scale-out.md) with one pipeline over as many, a cluster each, at one"
            + " concurrency level (default 16) in paired rounds; pipelines_ratio (K over 1) last")
    Integer pipelines;

    @Option(names = "--rounds", paramLabel = "R", description = "with --pin or --pipelines: paired rounds, 1-99"
            + " (default 3)")
    int rounds = 3;

    @Option(names = "--shared-prefix", description = "every prompt starts with one system prompt of --prefix-tokens"
            + " tokens, then a user turn of --prompt-tokens; measured with prefix caching on, then off, on a cluster"
            + " each (one concurrency level, default 4); prefix_cache_ttft_ratio (TTFT p50 off / on) last")
    boolean sharedPrefix;

    @Option(names = "--prefix-tokens", paramLabel = "N", description = "with --shared-prefix: the shared system"
            + " prompt's length (default 1000)")
    int prefixTokens = 1000;

    @Override
    public Integer call() throws Exception {
        List<Integer> levels = checkOptions();
        int workerCount = UpCommand.workers(spec, workers);
        PrintWriter out = spec.commandLine().getOut();
        ButterflyHome home = ButterflyHome.fromEnvironment();
        int portOffset = PortLayout.fromEnvironment().offset();
        Path dir = BenchCommand.model(model, home, out, spec.commandLine().getErr());
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        UpOptions options = UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE).withWorkers(workerCount).withModel(dir)
                .withPinnedWorkers(pin);
        out.printf("model %s: %s, %d layers, hidden %d, %,d parameters; %d workers%s; prompt %d tokens, %d output"
                        + " tokens per request (greedy, end-of-sequence ignored)%n",
                dir.getFileName(), config.architecture().id(), config.numLayers(), config.hiddenSize(),
                config.parameterCount(), options.workers(), pin ? ", worker-i pinned to core i mod "
                        + Runtime.getRuntime().availableProcessors() : "", promptTokens, outputTokens);
        if (sharedPrefix) {
            sharedPrefix(home, portOffset, options, config, levels.get(0), out);
            return 0;
        }
        Prompts prompts = new Prompts(seed, 0, promptTokens, config.vocabSize());
        if (pipelines != null) {
            Cluster several = new Cluster(pipelines + "-pipelines", home, portOffset + 900,
                    UpCommand.withPipelines(options, pipelines), config);
            Cluster one = new Cluster("1-pipeline", home, portOffset + 950, options, config);
            try (ExitGuard stop = ExitGuard.arm(() -> {
                one.down();
                several.down();
            })) {
                several.start(out);
                one.start(out);
                compare(several, one, levels.get(0), prompts, out, pipelines + " pipelines", "one pipeline",
                        "pipelines_ratio");
            }
            return 0;
        }
        // Port offsets 900 and 950 keep the clusters apart from each other, from bench's (+700, +800) and from a
        // cluster on the offset.
        Cluster inFlight = new Cluster("in-flight", home, portOffset + 900, options, config);
        if (!pin) {
            try (ExitGuard stop = ExitGuard.arm(inFlight::down)) {
                inFlight.start(out);
                sweep(inFlight, levels, prompts, out);
            }
            return 0;
        }
        Cluster oneAtATime = new Cluster("one-at-a-time", home, portOffset + 950,
                options.withCoordinatorArgs(List.of(ONE_MICRO_BATCH)), config);
        try (ExitGuard stop = ExitGuard.arm(() -> {
            oneAtATime.down();
            inFlight.down();
        })) {
            inFlight.start(out);
            oneAtATime.start(out);
            compare(inFlight, oneAtATime, levels.get(0), prompts, out, "micro-batches in flight", "one at a time",
                    "overlap_ratio");
        }
        return 0;
    }

    /** The concurrency levels to measure, once every option is checked. */
    private List<Integer> checkOptions() {
        List<Integer> levels = concurrency != null ? List.copyOf(concurrency)
                : pin || pipelines != null ? List.of(PINNED_LEVEL) : sharedPrefix ? List.of(4) : LEVELS;
        if (pipelines != null && (sharedPrefix || levels.size() != 1 || pipelines < 2
                || pipelines > UpCommand.workers(spec, workers))) {
            throw Commands.usageError(spec, "--pipelines compares K (2 to --workers) pipelines with one at one"
                    + " concurrency level, without --shared-prefix");
        }
        if (sharedPrefix && (pin || levels.size() != 1 || prefixTokens < 1)) {
            throw Commands.usageError(spec, "--shared-prefix measures one concurrency level, without --pin, and"
                    + " --prefix-tokens must be at least 1");
        }
        if (levels.isEmpty() || levels.stream().anyMatch(c -> c < 1 || c > 256)) {
            throw Commands.usageError(spec, "--concurrency must be a list of numbers from 1 to 256");
        }
        if (pin && levels.size() != 1) {
            throw Commands.usageError(spec, "--pin compares one concurrency level (default " + PINNED_LEVEL + ")");
        }
        if (requests != null && requests < 1) {
            throw Commands.usageError(spec, "--requests must be at least 1");
        }
        if (outputTokens < 1 || outputTokens > 1024) {
            throw Commands.usageError(spec, "--output-tokens must be a number from 1 to 1024");
        }
        if (promptTokens < 1) {
            throw Commands.usageError(spec, "--prompt-tokens must be at least 1");
        }
        if (warmupSeconds < 0) {
            throw Commands.usageError(spec, "--warmup-seconds must not be negative");
        }
        if (rounds < 1 || rounds > 99) {
            throw Commands.usageError(spec, "--rounds must be a number from 1 to 99");
        }
        return levels;
    }

    /**
     * Requests sharing one system prompt, on a cluster with prefix caching (the default) and then on one without
     * ({@code butterfly.worker.prefix-caching=false}), one after the other; each warmed up on prompts with the same
     * system prompt (as a server that has seen it before). The ratio of the TTFT medians last.
     */
    private void sharedPrefix(ButterflyHome home, int portOffset, UpOptions options, ModelConfig config, int c,
                              PrintWriter out) throws InterruptedException {
        Prompts prompts = new Prompts(seed, prefixTokens, promptTokens, config.vocabSize());
        out.printf("shared system prompt of %d tokens, user turns of %d tokens%n", prefixTokens, promptTokens);
        double[] ttft = new double[2];
        for (int i = 0; i < 2; i++) {
            boolean on = i == 0;
            Cluster cluster = new Cluster(on ? "prefix-cache-on" : "prefix-cache-off", home, portOffset + 900,
                    options.withWorkerArgs(on ? List.of() : List.of("--butterfly.worker.prefix-caching=false")), config);
            try (ExitGuard stop = ExitGuard.arm(cluster::down)) {
                cluster.start(out);
                warmUp(cluster, c, warmupSeconds, prompts, out);
                ServeLevel level = measure(cluster, c, prompts);
                print("prefix cache " + (on ? "on:  " : "off: "), level, out);
                ttft[i] = level.percentile(RequestTiming::ttftNanos, 50);
            }
        }
        if (ttft[0] <= 0 || ttft[1] <= 0) {
            out.println("prefix_cache_ttft_ratio: not measured (no request completed on one of the clusters)");
            return;
        }
        out.printf(Locale.ROOT, "prefix_cache_ttft_ratio=%.2f%n", ttft[1] / ttft[0]);
    }

    /** Every level in turn, a line each, then the batching ratio. */
    private void sweep(Cluster cluster, List<Integer> levels, Prompts prompts, PrintWriter out)
            throws InterruptedException {
        List<ServeLevel> measured = new ArrayList<>();
        for (int i = 0; i < levels.size(); i++) {
            int c = levels.get(i);
            warmUp(cluster, c, i == 0 ? warmupSeconds : 0, prompts, out);
            ServeLevel level = measure(cluster, c, prompts);
            print("", level, out);
            measured.add(level);
        }
        roofline(cluster, measured, out);
        OptionalDouble ratio = ServeLevel.batchingRatio(measured);
        if (ratio.isPresent()) {
            out.printf(Locale.ROOT, "batching_ratio=%.2f%n", ratio.getAsDouble());
        } else {
            out.println("batching_ratio: not measured (it needs concurrency levels 1 and 16, and a request completed"
                    + " at 1)");
        }
    }

    /**
     * A single stream against what this machine's engine attains (measured here, the cluster idle): the decode
     * bound of the whole model's bytes over the read bandwidth, at the mean context of a request.
     */
    private void roofline(Cluster cluster, List<ServeLevel> measured, PrintWriter out) {
        ModelConfig config = cluster.config;
        RooflineProbe.Rates rates = RooflineProbe.measure(BenchCommand.READ_MIB, 2_000_000_000L);
        Roofline model = new Roofline(config, Float.BYTES);
        int context = promptTokens + outputTokens / 2;
        double bound = model.decodeBound(rates.readGbps(), context);
        out.printf(Locale.ROOT, "roofline (this process's engine, %d threads): read %.1f GB/s, matmul %.1f GFLOP/s;"
                        + " one stream's decode bound %.1f tokens/s (%.1f MB read per token)%n", rates.threads(),
                rates.readGbps(), rates.matmulGflops(), bound, model.decodeBytes(context) / 1e6);
        measured.stream().filter(l -> l.concurrency() == 1 && l.outputTokensPerSecond() > 0).findFirst().ifPresent(l ->
                out.printf(Locale.ROOT, "roofline_fraction=%.2f%n", l.outputTokensPerSecond() / bound));
    }

    /**
     * Concurrency {@code c} on both clusters in paired rounds, the order alternating from round to round so that
     * neither always goes first; then the medians and the overlap ratio.
     */
    private void compare(Cluster inFlight, Cluster oneAtATime, int c, Prompts prompts, PrintWriter out, String first,
                         String second, String ratioName) throws InterruptedException {
        warmUp(inFlight, c, warmupSeconds, prompts, out);
        warmUp(oneAtATime, c, warmupSeconds, prompts, out);
        double[] overlapping = new double[rounds];
        double[] sequential = new double[rounds];
        List<Double> ratios = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            List<Cluster> order = r % 2 == 0 ? List.of(inFlight, oneAtATime) : List.of(oneAtATime, inFlight);
            for (Cluster cluster : order) {
                ServeLevel level = measure(cluster, c, prompts);
                print("round " + (r + 1) + " " + cluster.name + ": ", level, out);
                (cluster == inFlight ? overlapping : sequential)[r] = level.outputTokensPerSecond();
            }
            if (overlapping[r] > 0 && sequential[r] > 0) {
                ratios.add(overlapping[r] / sequential[r]);
            }
        }
        out.printf(Locale.ROOT, "concurrency %d, output tokens/s (median of %d round%s): %s %.2f, %s %.2f%n", c, rounds,
                rounds == 1 ? "" : "s", first, Stats.median(overlapping), second, Stats.median(sequential));
        if (ratios.isEmpty()) {
            out.println(ratioName + ": not measured (no round completed a request on both clusters)");
            return;
        }
        out.println("per-round ratios " + first + " / " + second + ": " + ratios.stream()
                .map(x -> String.format(Locale.ROOT, "%.2f", x)).collect(Collectors.joining(" ")));
        out.printf(Locale.ROOT, "%s=%.2f%n", ratioName,
                Stats.median(ratios.stream().mapToDouble(Double::doubleValue).toArray()));
    }

    /**
     * Unmeasured requests at concurrency {@code c}: at least one per client (every stream open, the level's batch
     * shapes run once) and for at least {@code seconds}.
     */
    private void warmUp(Cluster cluster, int c, int seconds, Prompts prompts, PrintWriter out)
            throws InterruptedException {
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        IntPredicate more = i -> i < c || System.nanoTime() < end;
        // Warm-up prompts are apart from the measured ones: index -1, -2, ...
        ServeLevel warm = ClosedLoop.run(c, more, i -> send(cluster, prompts.prompt(-1 - i)));
        out.printf(Locale.ROOT, "warm-up (%s, concurrency %d): %d requests, %d errors, %.1f s%n", cluster.name, c,
                warm.timings().size(), warm.errors(), warm.nanos() / 1e9);
        if (warm.errors() > 0) {
            out.println("  first error: " + warm.firstError());
        }
        out.flush();
    }

    private ServeLevel measure(Cluster cluster, int c, Prompts prompts) throws InterruptedException {
        int n = requests != null ? requests : Math.max(16, 4 * c);
        return ClosedLoop.run(c, i -> i < n, i -> send(cluster, prompts.prompt(i)));
    }

    private RequestTiming send(Cluster cluster, long[] prompt) {
        return cluster.send(BenchCommand.requestBody(prompt, outputTokens), outputTokens);
    }

    private static void print(String prefix, ServeLevel level, PrintWriter out) {
        out.println(prefix + level.line());
        if (level.errors() > 0) {
            out.println("  first error: " + level.firstError());
        }
        out.flush();
    }

    /**
     * The requests' bodies: request i's prompt is a shared prefix of {@code prefix} token ids (the same for every
     * request, drawn by a generator seeded with the seed alone), then {@code length} token ids drawn uniformly from
     * the vocabulary by a generator seeded with (seed, i), so a run's requests differ from each other and repeat from
     * run to run.
     */
    record Prompts(long seed, int prefix, int length, int vocab) {

        long[] prompt(int i) {
            long[] ids = new long[prefix + length];
            SplittableRandom shared = new SplittableRandom(seed ^ 0x5EED_5EEDL);
            for (int t = 0; t < prefix; t++) {
                ids[t] = shared.nextInt(vocab);
            }
            SplittableRandom random = new SplittableRandom(seed * 1_000_003L + i);
            for (int t = prefix; t < ids.length; t++) {
                ids[t] = random.nextInt(vocab);
            }
            return ids;
        }
    }

    /** A cluster under its own state directory and port offset, which streamed requests are sent to. */
    private static final class Cluster {
        private final String name;
        private final Launcher launcher;
        private final UpOptions options;
        private final ModelConfig config;
        private final String streamUrl;

        Cluster(String name, ButterflyHome home, int portOffset, UpOptions options, ModelConfig config) {
            this.name = name;
            this.launcher = new Launcher(home.withState(home.state().resolve("bench-serve").resolve(name)),
                    PortLayout.withOffset(portOffset));
            this.options = options;
            this.config = config;
            this.streamUrl = launcher.ports().coordinatorUrl() + "/api/v1/inference/stream";
        }

        void start(PrintWriter progress) {
            if (launcher.running()) { // left by a run that was killed: this state directory is the bench's own
                launcher.down();
            }
            progress.println("starting the " + name + " cluster (" + launcher.ports().coordinatorUrl() + ")");
            launcher.up(options, progress);
        }

        void down() {
            launcher.down();
        }

        /** Sends one streamed request for {@code tokens} tokens and times them as they arrive. */
        RequestTiming send(String body, int tokens) {
            long start = System.nanoTime();
            StreamTimer timer = new StreamTimer(start, System::nanoTime);
            try {
                PlainHttp.Response response = PlainHttp.postForEvents(streamUrl, body, REQUEST_TIMEOUT, timer);
                return timer.result(response, tokens);
            } catch (IOException e) {
                return RequestTiming.failed(e.toString());
            }
        }
    }
}
