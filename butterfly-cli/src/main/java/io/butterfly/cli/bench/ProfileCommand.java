package io.butterfly.cli.bench;

import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.cluster.ExitGuard;
import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.command.CommandFailedException;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.http.PlainHttp;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.ShardQuantizer;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.worker.engine.Activations;
import io.butterfly.worker.engine.DjlPartitionExecutor;
import io.butterfly.worker.engine.EngineProfiler;
import io.butterfly.worker.engine.EngineThread;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.engine.PartitionSpec;
import io.butterfly.worker.engine.SequenceChunk;
import io.butterfly.worker.engine.StageInput;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code profile}: where a decode step's time goes.
 *
 * <p>In this process, the whole model is loaded twice, as a worker loads it: once as it serves, once compiled with its
 * profiling scopes. Both prefill the same sequences and decode in lockstep; each measured step is timed on the first
 * and recorded by libtorch's profiler on the second, which gives the time per operation scope (projections, norms,
 * rotary embedding, attention, activation, residuals, LM head), per layer, and inside the engine's calls (the rest is
 * Java: the step's inputs, DJL's calls, the result's copy).
 *
 * <p>Then, in a cluster of one worker (started as {@code up} does, under its own state directory and port offset
 * +850), what a decode token costs beyond the worker's compute: the gRPC hand-off of the step and of its logits, the
 * coordinator's sampling, and the rest (scheduling, HTTP), from the requests' own timings. Each request is paired with
 * one of a single token on the same prompt, so the prefill step drops out.
 */
@Command(name = "profile", description = "where a decode step's time goes: per operation and layer in the engine, then"
        + " the worker, gRPC and sampling in a one-worker cluster")
public final class ProfileCommand implements Callable<Integer> {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Duration REQUEST_TIMEOUT = Duration.ofMinutes(10);

    @Spec
    CommandSpec spec;

    @Option(names = "--model", paramLabel = "DIR", description = "default: the generated bench-100m model (~100M parameters)")
    Path model;

    @Option(names = "--sequences", paramLabel = "N", description = "sequences decoded together in each step, 1-256"
            + " (default 1); in the cluster, as many concurrent requests")
    int sequences = 1;

    @Option(names = "--prompt-tokens", paramLabel = "N", description = "prompt length in tokens (default 32)")
    int promptTokens = 32;

    @Option(names = "--steps", paramLabel = "N", description = "measured decode steps (default 32), after as many"
            + " unmeasured ones")
    int steps = 32;

    @Option(names = "--threads", paramLabel = "N", description = "engine threads (default: the machine's cores, as a"
            + " lone worker gets)")
    Integer threads;

    @Option(names = "--trace", paramLabel = "FILE", description = "keep the last profiled step's Chrome trace"
            + " (chrome://tracing, ui.perfetto.dev)")
    Path trace;

    @Option(names = "--requests", paramLabel = "N", description = "measured requests per client in the cluster"
            + " (default 8; 0 skips the cluster)")
    int requests = 8;

    @Option(names = "--workers", paramLabel = "N", description = "workers of the profiled cluster, 1-8 (default 1): with"
            + " more, the hops between stages show in the gRPC line")
    int workers = 1;

    @Option(names = "--output-tokens", paramLabel = "N", description = "tokens per request in the cluster (default 64)")
    int outputTokens = 64;

    @Option(names = "--warmup-seconds", paramLabel = "S", description = "unmeasured requests first, at least this long"
            + " (default 30: the worker's per-step path needs a few hundred steps to be compiled)")
    int warmupSeconds = 30;

    @Option(names = "--weights", paramLabel = "f32|q8|q4|q4_k", description = "the weights: float32 (default) or"
            + " quantized as the registry's import quantizes them (the native kernels, which record no per-operation"
            + " scopes: the engine part then times served steps only)")
    String weights = "f32";

    @Option(names = "--activations", paramLabel = "int8|f32", description = "what the native kernels' quantized products"
            + " multiply in this process: activations rounded to 8 bits (int8, default, as workers do) or float32 (f32,"
            + " weight-only); a cluster's workers take BUTTERFLY_WORKER_ACTIVATIONS")
    String activations = "int8";

    @Override
    public Integer call() throws Exception {
        checkOptions();
        PrintWriter out = spec.commandLine().getOut();
        ButterflyHome home = ButterflyHome.fromEnvironment();
        Path dir = BenchCommand.model(model, home, out, spec.commandLine().getErr());
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        WeightQuantization quantization = weights.equalsIgnoreCase("f32") ? null : WeightQuantization.byId(weights)
                .orElseThrow(() -> Commands.usageError(spec, "--weights must be f32, q8, q4 or q4_k"));
        int engineThreads = threads != null ? threads : Runtime.getRuntime().availableProcessors();
        out.printf("model %s: %s, %d layers, hidden %d, %,d parameters; %d sequence%s a step, prompt %d tokens;"
                        + " %d engine thread%s%n", dir.getFileName(), config.architecture().id(), config.numLayers(),
                config.hiddenSize(), config.parameterCount(), sequences, sequences == 1 ? "" : "s", promptTokens,
                engineThreads, engineThreads == 1 ? "" : "s");
        out.flush();
        profileEngine(quantization == null ? dir : quantized(dir, quantization, config, out), config, engineThreads, out);
        if (requests > 0) {
            profileCluster(dir, config, home, quantization, out);
        }
        return 0;
    }

    private void checkOptions() {
        if (sequences < 1 || sequences > 256) {
            throw Commands.usageError(spec, "--sequences must be a number from 1 to 256");
        }
        if (promptTokens < 1 || steps < 1 || outputTokens < 2 || requests < 0 || warmupSeconds < 0 || workers < 1
                || workers > 8) {
            throw Commands.usageError(spec, "--prompt-tokens and --steps must be at least 1, --output-tokens at least 2,"
                    + " --requests and --warmup-seconds not negative");
        }
        if (threads != null && threads < 1) {
            throw Commands.usageError(spec, "--threads must be at least 1");
        }
        if (!activations.equalsIgnoreCase("int8") && !activations.equalsIgnoreCase("f32")) {
            throw Commands.usageError(spec, "--activations must be int8 or f32");
        }
    }

    /** The model with its matrices quantized as the registry's import does it, written beside it the first time. */
    static Path quantized(Path dir, WeightQuantization quantization, ModelConfig config, PrintWriter out)
            throws IOException {
        Path copy = dir.resolveSibling(dir.getFileName() + "-" + quantization.id());
        Path weights = copy.resolve("model.safetensors");
        if (!Files.exists(weights) || Files.getLastModifiedTime(weights).compareTo(
                Files.getLastModifiedTime(dir.resolve("model.safetensors"))) < 0) {
            out.println("quantizing the model to " + quantization.id() + " in " + copy);
            Files.createDirectories(copy);
            Files.copy(dir.resolve("config.json"), copy.resolve("config.json"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            try (SafetensorsFile f = SafetensorsFile.open(dir.resolve("model.safetensors"))) {
                ShardQuantizer.write(weights, f.tensors().keySet().stream().map(t -> new ShardQuantizer.Source(t, f))
                        .toList(), quantization, config);
            }
        }
        return copy;
    }

    /** Decode steps in this process, timed as served and recorded by the profiler, in lockstep. */
    private void profileEngine(Path dir, ModelConfig config, int engineThreads, PrintWriter out) throws IOException {
        PartitionSpec whole = PartitionSpec.whole(config);
        List<Path> files = List.of(dir.resolve("model.safetensors"));
        int reach = promptTokens + 2 * steps + 1;
        Path traceFile = Files.createTempFile("butterfly-step", ".json");
        // One engine thread, as a worker's: the loads, the steps and the profiler (which records its own thread) on it.
        try (EngineThread engine = EngineThread.named("engine")) {
            ExecutorOptions options = new ExecutorOptions("cpu", engineThreads, 0)
                    .withActivations(Activations.valueOf(activations.toUpperCase(java.util.Locale.ROOT)))
                    .withEngineThread(engine);
            profileSteps(whole, files, config, options, engine, reach, traceFile, out);
        }
    }

    private void profileSteps(PartitionSpec whole, List<Path> files, ModelConfig config, ExecutorOptions options,
                              EngineThread engine, int reach, Path traceFile, PrintWriter out) throws IOException {
        try (DjlPartitionExecutor serving = DjlPartitionExecutor.load(whole, files, options);
             DjlPartitionExecutor profiled = DjlPartitionExecutor.load(whole, files, options.withProfiling(true))) {
            List<SequenceChunk> prompts = new ArrayList<>();
            long[] promptIds = new long[sequences * promptTokens];
            for (int s = 0; s < sequences; s++) {
                prompts.add(new SequenceChunk("s" + s, 0, promptTokens, reach));
                for (int t = 0; t < promptTokens; t++) {
                    promptIds[s * promptTokens + t] = (s * 7919L + t * 104_729L + 13) % config.vocabSize();
                }
            }
            serving.forward(prompts, new StageInput.Tokens(promptIds));
            profiled.forward(prompts, new StageInput.Tokens(promptIds));
            double[] servedMs = new double[steps];
            double[] profiledMs = new double[steps];
            double[] javaMs = new double[steps];
            List<StepTrace> traces = new ArrayList<>();
            for (int step = 0; step < 2 * steps; step++) {
                List<SequenceChunk> batch = new ArrayList<>();
                long[] ids = new long[sequences];
                for (int s = 0; s < sequences; s++) {
                    batch.add(new SequenceChunk("s" + s, promptTokens + step, 1, reach));
                    ids[s] = (s * 131L + step * 17L + 5) % config.vocabSize();
                }
                boolean measured = step >= steps;
                long t0 = System.nanoTime();
                serving.forward(batch, new StageInput.Tokens(ids));
                long t1 = System.nanoTime();
                if (measured) {
                    EngineProfiler.start(engine);
                }
                long t2 = System.nanoTime();
                profiled.forward(batch, new StageInput.Tokens(ids));
                long t3 = System.nanoTime();
                if (measured) {
                    EngineProfiler.stop(engine, traceFile);
                    int i = step - steps;
                    StepTrace t = StepTrace.parse(Files.readString(traceFile));
                    traces.add(t);
                    servedMs[i] = (t1 - t0) / 1e6;
                    profiledMs[i] = (t3 - t2) / 1e6;
                    javaMs[i] = profiledMs[i] - t.engineMs();
                }
            }
            if (trace != null) {
                Files.copy(traceFile, trace, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
            double served = Stats.median(servedMs);
            double underProfiler = Stats.median(profiledMs);
            out.printf(Locale.ROOT, "decode step in this process (whole model, %s): %.2f ms (median of %d; %.1f tokens/s)%n",
                    serving.projections(), served, steps, sequences * 1000 / served);
            if (serving.projections().startsWith("native")) {
                out.flush();
                return;
            }
            out.printf(Locale.ROOT, "under the profiler: %.2f ms, of which (median per step, share of the profiled step):%n",
                    underProfiler);
            Map<String, Double> operations = medians(traces.stream().map(StepTrace::byOperation).toList());
            operations.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed())
                    .forEach(e -> out.printf(Locale.ROOT, "  %-26s %8.3f ms %5.1f%%%n", e.getKey(), e.getValue(),
                            100 * e.getValue() / underProfiler));
            double java = Stats.median(javaMs);
            out.printf(Locale.ROOT, "  %-26s %8.3f ms %5.1f%%%n", "java (inputs, DJL, result)", java, 100 * java / underProfiler);
            Map<Integer, Double> layers = medians(traces.stream().map(StepTrace::byLayer).toList());
            out.println("per layer (ms): " + layers.entrySet().stream()
                    .map(e -> String.format(Locale.ROOT, "%d: %.3f", e.getKey(), e.getValue()))
                    .collect(Collectors.joining(", ")));
            if (trace != null) {
                out.println("the last profiled step's trace: " + trace.toAbsolutePath());
            }
            out.flush();
        } finally {
            Files.deleteIfExists(traceFile);
        }
    }

    /** Per key, the median over the steps (a step without the key counts as 0). */
    private static <K extends Comparable<K>> Map<K, Double> medians(List<Map<K, Double>> perStep) {
        Map<K, Double> out = new LinkedHashMap<>();
        new TreeMap<K, Double>(perStep.isEmpty() ? Map.of() : perStep.get(perStep.size() - 1)).keySet().forEach(k ->
                out.put(k, Stats.median(perStep.stream().mapToDouble(m -> m.getOrDefault(k, 0.0)).toArray())));
        return out;
    }

    /** Per decode token in a cluster of {@link #workers}: the stages' compute, gRPC, sampling, the rest. */
    private void profileCluster(Path dir, ModelConfig config, ButterflyHome home, WeightQuantization quantization,
                                PrintWriter out) throws Exception {
        Launcher launcher = new Launcher(home.withState(home.state().resolve("profile/workers-" + workers)),
                PortLayout.withOffset(PortLayout.fromEnvironment().offset() + 850));
        try (ExitGuard stop = ExitGuard.arm(launcher::down)) {
            if (launcher.running()) { // left by a run that was killed: this state directory is the profile's own
                launcher.down();
            }
            out.println("starting a cluster of " + workers + " worker" + (workers == 1 ? "" : "s") + " ("
                    + launcher.ports().coordinatorUrl() + ")");
            launcher.up(UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE).withWorkers(workers).withModel(dir)
                    .withQuantize(quantization == null ? null : quantization.id()), out);
            String url = launcher.ports().coordinatorUrl() + "/api/v1/inference";
            long warmEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L;
            int warm = 0;
            while (warm < 2 || System.nanoTime() < warmEnd) {
                concurrently(url, config, -1 - warm);
                warm++;
            }
            List<DecodeCost> costs = new ArrayList<>();
            for (int r = 0; r < requests; r++) {
                costs.addAll(concurrently(url, config, r));
            }
            double worker = Stats.median(costs.stream().mapToDouble(DecodeCost::workerMs).toArray());
            double transport = Stats.median(costs.stream().mapToDouble(DecodeCost::transportMs).toArray());
            double sampling = Stats.median(costs.stream().mapToDouble(DecodeCost::samplingMs).toArray());
            double rest = Stats.median(costs.stream().mapToDouble(DecodeCost::restMs).toArray());
            double total = Stats.median(costs.stream().mapToDouble(DecodeCost::totalMs).toArray());
            out.printf(Locale.ROOT, "cluster, %d worker%s, %d concurrent request%s of %d tokens (median of %d): per decode"
                            + " token %.2f ms (%.1f tokens/s a request):%n", workers, workers == 1 ? "" : "s",
                    sequences, sequences == 1 ? "" : "s",
                    outputTokens, costs.size(), total, 1000 / total);
            out.printf(Locale.ROOT, "  %-26s %8.3f ms%n", workers == 1 ? "worker compute" : "stages' compute", worker);
            out.printf(Locale.ROOT, "  %-26s %8.3f ms%n", "gRPC: steps and logits", transport);
            out.printf(Locale.ROOT, "  %-26s %8.3f ms%n", "sampling (coordinator)", sampling);
            out.printf(Locale.ROOT, "  %-26s %8.3f ms%n", "rest (scheduling, HTTP)", rest);
        }
    }

    /** A request's per-decode-token costs: its timings less those of a one-token request on the same prompt. */
    record DecodeCost(double workerMs, double transportMs, double samplingMs, double restMs, double totalMs) {
    }

    /** One request pair per client, {@link #sequences} clients at once; request index {@code r} picks the prompts. */
    private List<DecodeCost> concurrently(String url, ModelConfig config, int r) throws Exception {
        List<Callable<DecodeCost>> clients = new ArrayList<>();
        for (int c = 0; c < sequences; c++) {
            long[] prompt = new ServeBenchCommand.Prompts(r, 0, promptTokens, config.vocabSize()).prompt(c);
            clients.add(() -> decodeCost(url, prompt));
        }
        List<DecodeCost> costs = new ArrayList<>();
        var pool = java.util.concurrent.Executors.newFixedThreadPool(sequences);
        try {
            for (var f : pool.invokeAll(clients)) {
                costs.add(f.get());
            }
        } finally {
            pool.shutdownNow();
        }
        return costs;
    }

    private DecodeCost decodeCost(String url, long[] prompt) throws IOException {
        JsonNode full = timings(url, prompt, outputTokens);
        JsonNode one = timings(url, prompt, 1);
        int decoded = outputTokens - 1;
        double worker = (sum(full.path("stage_compute_ms")) - sum(one.path("stage_compute_ms"))) / decoded;
        double transport = (full.path("transport_ms").asDouble() - one.path("transport_ms").asDouble()) / decoded;
        double sampling = (full.path("sampling_ms").asDouble() - one.path("sampling_ms").asDouble()) / decoded;
        double total = (full.path("total_ms").asDouble() - one.path("total_ms").asDouble()) / decoded;
        double pipeline = (full.path("pipeline_ms").asDouble() - one.path("pipeline_ms").asDouble()) / decoded;
        return new DecodeCost(worker, transport, sampling, total - pipeline - sampling, total);
    }

    private static double sum(JsonNode perStage) {
        double sum = 0;
        for (JsonNode v : perStage) {
            sum += v.asDouble();
        }
        return sum;
    }

    private static JsonNode timings(String url, long[] prompt, int tokens) throws IOException {
        PlainHttp.Response r = PlainHttp.postJson(url, BenchCommand.requestBody(prompt, tokens), REQUEST_TIMEOUT);
        if (r.status() != 200) {
            throw new CommandFailedException("inference failed: HTTP " + r.status() + " " + r.body());
        }
        return JSON.readTree(r.body()).path("timings");
    }
}
