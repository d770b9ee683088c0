package io.butterfly.cli.bench;

import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.ServiceJvm;
import io.butterfly.cli.cluster.UpCommand;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.command.CommandFailedException;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.command.Log;
import io.butterfly.cli.generate.GenerateModelCommand;
import io.butterfly.cli.process.FileTrees;
import io.butterfly.cli.process.JavaRuntime;
import io.butterfly.cli.process.ServiceProcess;
import io.butterfly.common.manifest.ModelIds;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bench-load}: a cold load of a model (by default the ~540 MB bench-100m Llama; with {@code --shape} a real
 * model's shape, generated once) on N workers, from the services' start to READY, against reading and SHA-256-ing the
 * same bytes once; then a short greedy generation's decode tokens/s and each process's peak resident memory.
 *
 * <p>Each round is a whole cold start (really cold workers: nothing downloaded yet); the median of the rounds is
 * reported, since on a shared machine one start can take half as long again as the next as other load comes and
 * goes. The clock of the bootstrap starts at the latest moment a service logged that it had started
 * ({@code Started ...Application in}) and stops when {@code up} sees READY. The baselines: the bytes the workers
 * fetched (the registry's stored files) read and hashed once by coreutils' {@code sha256sum}, and by the JDK's
 * SHA-256 as the workers run it ({@link HashBaseline}), which must hash to the same digest. A model not yet in the
 * registry's store is imported by a first start that is reported apart and not counted (an import copies and hashes
 * the whole model once; later starts reuse it).
 */
@Command(name = "bench-load", description = "cold load to READY vs. read+SHA-256 of the same bytes (median of"
        + " --rounds cold starts, default 3), decode tokens/s and each process's peak RSS")
public final class LoadBenchCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--workers", defaultValue = "3", paramLabel = "N", description = "workers (default 3)")
    String workers;

    @Option(names = "--planner", paramLabel = "capacity-weighted|optimal", description = "partition planner")
    String planner;

    @Option(names = "--model", paramLabel = "DIR", description = "default: the generated bench-100m model")
    Path model;

    @Option(names = "--shape", paramLabel = "llama-3.2-1b|llama-3.1-8b", description = "a real model's shape instead,"
            + " generated once (model generate --shape)")
    String shape;

    @Option(names = "--weights", paramLabel = "f32|bf16|q4", description = "the shape's weights: f32 or bf16 (a model"
            + " directory), q4 (a GGUF file, Q4_0 with a Q6_K head); default f32 for llama-3.2-1b, q4 for llama-3.1-8b")
    String weights;

    @Option(names = "--models", paramLabel = "DIR", description = "where --shape models are generated and kept"
            + " (default: the state directory's models/)")
    Path models;

    @Option(names = "--tokens", defaultValue = "32", paramLabel = "N", description = "tokens of the greedy generation"
            + " timed once READY (default 32)")
    String tokens;

    @Option(names = "--cold", arity = "0..1", paramLabel = "true|false", description = "drop the store's files from the"
            + " page cache before each cold start and each baseline, so both read from the disk (default: on with"
            + " --shape, off otherwise: the store read once, warm, before the rounds)")
    Boolean cold;

    @Option(names = "--transfer", defaultValue = "shared", paramLabel = "shared|stream", description = "how workers get"
            + " their shards (default shared)")
    String transfer;

    @Option(names = "--rounds", defaultValue = "3", paramLabel = "N", description = "cold starts, 1-99 (default 3)")
    String rounds;

    @Override
    public Integer call() throws Exception {
        if (!rounds.matches("[1-9][0-9]?")) {
            throw Commands.usageError(spec, "--rounds must be a number from 1 to 99");
        }
        if (!tokens.matches("[1-9][0-9]{0,2}")) {
            throw Commands.usageError(spec, "--tokens must be a number from 1 to 999");
        }
        int roundCount = Integer.parseInt(rounds);
        Launcher launcher = Launcher.fromEnvironment();
        UpOptions options = UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE).withWorkers(UpCommand.workers(spec, workers))
                .withPlanner(UpCommand.planner(spec, planner)).withTransfer(UpCommand.transfer(spec, transfer));
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Path dir = model(launcher, out, err);
        options = options.withModel(dir);
        if (launcher.running()) {
            launcher.down();
        }
        String modelId = ModelIds.imported(dir.toAbsolutePath().normalize(), null);
        Path store = launcher.home().registryStore().resolve(modelId);
        if (storedFiles(store).isEmpty()) {
            Log.info("importing " + modelId + " into the registry's store first (a start of its own, not counted)");
            Instant i0 = Instant.now();
            launcher.up(options, err);
            out.println("import round: up_to_ready_ms=" + Duration.between(i0, Instant.now()).toMillis()
                    + " (imports the model: not a cold start of the workers alone)");
            launcher.down();
        }
        // The same page cache for both timings: the baseline reads the store warm (just after the bootstrap read
        // it), so the store is read once before the first round's clock starts too; a bootstrap that read it from
        // disk would be timed against a warm baseline. That first read is printed (read_and_sha256_first_ms).
        boolean fromDisk = cold != null ? cold : shape != null;
        long f0 = System.nanoTime();
        sha256sum(storedFiles(store));
        String firstMs = Long.toString((System.nanoTime() - f0) / 1_000_000);
        List<String> jvms = new ArrayList<>();
        List<String> loads = new ArrayList<>();
        List<String> totals = new ArrayList<>();
        List<String> hashes = new ArrayList<>();
        List<String> ratios = new ArrayList<>();
        List<String> fromUpRatios = new ArrayList<>();
        List<String> jdkHashes = new ArrayList<>();
        List<String> jdkRatios = new ArrayList<>();
        List<String> decodes = new ArrayList<>();
        Map<String, Long> peakRss = new TreeMap<>();
        GreedyDecode decode = new GreedyDecode(launcher.ports().coordinatorUrl());
        for (int r = 1; r <= roundCount; r++) {
            // Really cold workers: nothing downloaded yet.
            try (Stream<Path> data = Files.exists(launcher.home().state().resolve("data"))
                    ? Files.list(launcher.home().state().resolve("data")) : Stream.empty()) {
                data.filter(d -> d.getFileName().toString().startsWith("worker-")).forEach(FileTrees::delete);
            }
            FileTrees.delete(launcher.home().data("coordinator"));
            if (fromDisk) {
                PageCache.evict(storedFiles(store));
            }
            Instant t0 = Instant.now();
            Instant servicesStarted = launcher.up(options, err);
            Instant t1 = Instant.now();
            decode.tokensPerSecond(4); // the first request's compilations are not the decode's
            decodes.add(String.format(Locale.ROOT, "%.2f", decode.tokensPerSecond(Integer.parseInt(tokens))));
            for (ServiceProcess p : launcher.supervisor().running()) {
                PeakRss.megabytes(p.pid()).ifPresent(mb -> peakRss.merge(p.name(), mb, Math::max));
            }
            List<Path> files = storedFiles(store);
            launcher.down(); // before the baselines: a cold read must not find the pages the workers map
            if (fromDisk) {
                PageCache.evict(files);
            }
            long h0 = System.nanoTime();
            String digest = sha256sum(files);
            long hashMs = Math.max(1, (System.nanoTime() - h0) / 1_000_000);
            if (fromDisk) {
                PageCache.evict(files);
            }
            String[] jdk = jdkHash(files);
            if (jdk == null) {
                throw new CommandFailedException("the JDK hash baseline printed no time and digest");
            }
            if (!jdk[1].equals(digest)) {
                throw new CommandFailedException("the JDK hash baseline hashed other bytes than sha256sum (" + jdk[1]
                        + " != " + digest + ")");
            }
            long jdkMs = Math.max(1, Long.parseLong(jdk[0]));
            long loadMs = Duration.between(servicesStarted, t1).toMillis();
            long totalMs = Duration.between(t0, t1).toMillis();
            jvms.add(Long.toString(Duration.between(t0, servicesStarted).toMillis()));
            loads.add(Long.toString(loadMs));
            totals.add(Long.toString(totalMs));
            hashes.add(Long.toString(hashMs));
            ratios.add(Stats.ratio(loadMs, hashMs));
            fromUpRatios.add(Stats.ratio(totalMs, hashMs));
            jdkHashes.add(Long.toString(jdkMs));
            jdkRatios.add(Stats.ratio(loadMs, jdkMs));
            out.println("round " + r + ": services_start_ms=" + last(jvms) + " bootstrap_to_ready_ms=" + loadMs
                    + " up_to_ready_ms=" + totalMs + " read_and_sha256_ms=" + hashMs + " read_and_sha256_jdk_ms=" + jdkMs
                    + " ratio_jdk=" + last(jdkRatios) + " decode_tokens_per_s=" + last(decodes) + " ratio=" + last(ratios));
            out.flush();
        }
        long bytes = 0;
        for (Path f : storedFiles(store)) {
            bytes += Files.size(f);
        }
        out.println("model=" + modelId + " bytes=" + bytes + " workers=" + options.workers() + " transfer=" + transfer
                + " rounds=" + roundCount + " page_cache=" + (fromDisk ? "cold (read from the disk)" : "warm")
                + " (medians below)");
        out.println("services_start_ms=" + Stats.median(jvms));
        out.println("bootstrap_to_ready_ms=" + Stats.median(loads));
        out.println("total_cold_start_ms=" + Stats.median(totals));
        out.println("read_and_sha256_first_ms=" + firstMs);
        out.println("read_and_sha256_ms=" + Stats.median(hashes) + " (coreutils sha256sum)");
        out.println("read_and_sha256_jdk_ms=" + Stats.median(jdkHashes) + " (the JDK's SHA-256 on one thread, JIT-warm)");
        out.println("time_to_ready_s=" + seconds(Stats.median(totals)) + " (from up to READY)");
        out.println("bootstrap_to_ready_s=" + seconds(Stats.median(loads)) + " (from the services' start to READY)");
        out.println("cold_start_ratio=" + Stats.median(ratios) + " (bootstrap to READY / read+sha256sum once)");
        out.println("cold_start_ratio_from_up=" + Stats.median(fromUpRatios) + " (up to READY / read+sha256sum once)");
        out.println("decode_tokens_per_s=" + Stats.median(decodes) + " (greedy, " + tokens + " tokens)");
        peakRss.forEach((name, mb) -> out.println("peak_rss_mb{" + name + "}=" + mb));
        out.println("ratio_jdk=" + Stats.median(jdkRatios)); // against the JDK's hash
        out.println("ratio=" + Stats.median(ratios)); // the median of the rounds' ratios against sha256sum
        return 0;
    }

    /** The model to load: {@code --model}, a {@code --shape} (generated once), or bench-100m. */
    private Path model(Launcher launcher, PrintWriter out, PrintWriter err) {
        if (shape == null) {
            if (weights != null || models != null) {
                throw Commands.usageError(spec, "--weights and --models go with --shape");
            }
            Path dir = model != null ? model : launcher.home().model("bench-100m");
            if (!Files.exists(dir.resolve("config.json")) && !Files.isRegularFile(dir)) {
                Log.info("generating the bench-100m model into " + dir);
                GenerateModelCommand.generatePreset("bench-100m", dir, new PrintWriter(Writer.nullWriter()), err);
            }
            return dir;
        }
        if (model != null) {
            throw Commands.usageError(spec, "--model or --shape, not both");
        }
        ShapedModel shaped;
        try {
            shaped = new ShapedModel(shape, weights != null ? weights : shape.equals("llama-3.1-8b") ? "q4" : "f32");
        } catch (IllegalArgumentException e) {
            throw Commands.usageError(spec, e.getMessage());
        }
        Path dir = models != null ? models : launcher.home().model(shape).getParent();
        return shaped.ensureGenerated(dir, out, err);
    }

    private static String seconds(String ms) {
        return String.format(Locale.ROOT, "%.1f", Double.parseDouble(ms) / 1000);
    }

    /** The registry's stored files of the model, as the workers fetch them: its safetensors, then its JSON. */
    private static List<Path> storedFiles(Path store) throws IOException {
        if (!Files.isDirectory(store)) {
            return List.of();
        }
        List<Path> files = new ArrayList<>();
        for (String extension : List.of(".safetensors", ".json")) {
            try (Stream<Path> s = Files.list(store)) {
                s.filter(p -> p.getFileName().toString().endsWith(extension)).sorted(Comparator.comparing(Path::toString))
                        .forEach(files::add);
            }
        }
        return files.stream().anyMatch(p -> p.toString().endsWith(".safetensors")) ? files : List.of();
    }

    /** {@code cat FILES | sha256sum}: the digest, hex. */
    private static String sha256sum(List<Path> files) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("sh", "-c", "cat \"$@\" | sha256sum", "sh"));
        files.forEach(f -> command.add(f.toString()));
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String printed = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0 || printed.isBlank()) {
            throw new CommandFailedException("cat | sha256sum failed on " + files);
        }
        return printed.strip().split("\\s+")[0];
    }

    /**
     * The same bytes through the JDK's SHA-256 as the workers run it (JIT-compiled, SHA instructions): 3-4 times
     * faster than coreutils' sha256sum here, so the ratio against it is printed too. In a JVM of its own with the
     * services' options and full C2, not BUTTERFLY_JVM_OPTS (a flight recording would be timed too).
     *
     * @return {milliseconds, digest}, or null if it printed neither
     */
    private static String[] jdkHash(List<Path> files) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(JavaRuntime.current().java());
        command.addAll(ServiceJvm.COMMON);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), HashBaseline.class.getName()));
        files.forEach(f -> command.add(f.toString()));
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String printed = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            return null;
        }
        String[] result = null;
        for (String line : printed.lines().toList()) {
            if (line.matches("[0-9]+ [0-9a-f]{64}")) {
                result = line.split(" ");
            }
        }
        return result;
    }

    private static String last(List<String> values) {
        return values.get(values.size() - 1);
    }
}
