package io.butterfly.cli.bench;

import io.butterfly.cli.cluster.ExitGuard;
import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.cluster.UpCommand;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.command.CommandFailedException;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.http.PlainHttp;
import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.model.ModelConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntPredicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bench-jobs}: what a batch job costs interactive requests (docs/jobs.md, priority), on one cluster in one run.
 *
 * <p>It starts a cluster as {@code up} does (its own state directory, port offset +750, the JOBS port open in
 * plaintext on loopback), defines a job over a generated dataset, and runs interactive streamed requests (a closed
 * loop of {@code --concurrency} clients, greedy, as {@code bench-serve}'s) twice for {@code --seconds} each: first
 * alone, then while {@code --clients} JOBS clients ({@link JobsPuller}) pull batches of the job and answer each with a
 * RESULT. It prints the interactive TTFT p50/p99 of both phases, the job's samples/s during the second, and last
 * {@code jobs_samples_per_s=X interactive_ttft_p99_ratio=Y} (p99 with the job ÷ without).
 */
@Command(name = "bench-jobs", description = "interactive TTFT p50/p99 without and with a batch job pulled by N JOBS"
        + " clients, the job's samples/s; jobs_samples_per_s and interactive_ttft_p99_ratio last")
public final class JobsBenchCommand implements Callable<Integer> {

    private static final int PORT_OFFSET = 750;
    private static final long JOB_SEED = 4848;
    private static final Duration REQUEST_TIMEOUT = Duration.ofMinutes(10);

    @Spec
    CommandSpec spec;

    @Option(names = "--workers", defaultValue = "3", paramLabel = "N", description = "workers (default 3)")
    String workers;

    @Option(names = "--model", paramLabel = "DIR", description = "default: the generated bench-100m model (~100M parameters)")
    Path model;

    @Option(names = "--clients", paramLabel = "N", description = "JOBS clients pulling the job, 1-256 (default 8)")
    int clients = 8;

    @Option(names = "--concurrency", paramLabel = "C", description = "interactive requests in flight, 1-256 (default 4)")
    int concurrency = 4;

    @Option(names = "--seconds", paramLabel = "S", description = "each phase's measured time (default 120)")
    int seconds = 120;

    @Option(names = "--warmup-seconds", paramLabel = "S", description = "unmeasured interactive requests first"
            + " (default 60)")
    int warmupSeconds = 60;

    @Option(names = "--output-tokens", paramLabel = "N", description = "tokens per interactive request (default 32)")
    int outputTokens = 32;

    @Option(names = "--prompt-tokens", paramLabel = "N", description = "interactive prompt length (default 32)")
    int promptTokens = 32;

    @Option(names = "--job-tokens", paramLabel = "N", description = "the job's max_tokens per sample (default 32)")
    int jobTokens = 32;

    @Option(names = "--batch-size", paramLabel = "N", description = "the job's batch_size (default 8)")
    int batchSize = 8;

    @Option(names = "--samples", paramLabel = "N", description = "the job's dataset lines (default 512; a client"
            + " moves to the next step, fresh samples, when a pass is done)")
    int samples = 512;

    @Override
    public Integer call() throws Exception {
        checkOptions();
        int workerCount = UpCommand.workers(spec, workers);
        PrintWriter out = spec.commandLine().getOut();
        ButterflyHome home = ButterflyHome.fromEnvironment();
        PortLayout ports = PortLayout.withOffset(PortLayout.fromEnvironment().offset() + PORT_OFFSET);
        int jobsPort = 7470 + ports.offset();
        Path dir = BenchCommand.model(model, home, out, spec.commandLine().getErr());
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        UpOptions options = UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE)
                .withWorkers(workerCount).withModel(dir)
                .withCoordinatorArgs(List.of("--butterfly.coordinator.jobs.enabled=true",
                        "--butterfly.coordinator.jobs.plaintext=true", "--butterfly.coordinator.jobs.host=127.0.0.1",
                        "--butterfly.coordinator.jobs.port=" + jobsPort));
        Launcher launcher = new Launcher(home.withState(home.state().resolve("bench-jobs")), ports);
        out.printf("model %s: %s, %d layers, hidden %d; %d workers; interactive: concurrency %d, prompt %d tokens,"
                        + " %d output tokens (greedy); job: %d clients, batch %d, %d tokens a sample (temperature 1)%n",
                dir.getFileName(), config.architecture().id(), config.numLayers(), config.hiddenSize(),
                options.workers(), concurrency, promptTokens, outputTokens, clients, batchSize, jobTokens);
        ServeBenchCommand.Prompts prompts = new ServeBenchCommand.Prompts(0, 0, promptTokens, config.vocabSize());
        String streamUrl = ports.coordinatorUrl() + "/api/v1/inference/stream";
        if (launcher.running()) { // left by a run that was killed: this state directory is the bench's own
            launcher.down();
        }
        try (ExitGuard stop = ExitGuard.arm(launcher::down)) {
            out.println("starting the cluster (" + ports.coordinatorUrl() + ", JOBS port " + jobsPort + ")");
            out.flush();
            launcher.up(options, out);
            defineJob(ports.coordinatorUrl());

            long warmEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L;
            ServeLevel warm = ClosedLoop.run(concurrency, i -> i < concurrency || System.nanoTime() < warmEnd,
                    i -> send(streamUrl, prompts.prompt(-1 - i)));
            out.printf(Locale.ROOT, "warm-up: %d requests, %d errors%n", warm.timings().size(), warm.errors());
            out.flush();

            ServeLevel alone = interactive(streamUrl, prompts, 0);
            out.println("interactive without the job: " + alone.line());
            out.flush();

            AtomicLong step = new AtomicLong();
            AtomicLong received = new AtomicLong();
            AtomicLong batches = new AtomicLong();
            List<JobsPuller> pullers = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                JobsPuller puller = new JobsPuller("127.0.0.1", jobsPort, JOB_SEED, step, received, batches);
                pullers.add(puller);
                DaemonThreads.start("bench-jobs-client-" + c, puller);
            }
            try {
                awaitFirstBatch(batches, pullers);
                long samples0 = received.get();
                long batches0 = batches.get();
                long t0 = System.nanoTime();
                ServeLevel during = interactive(streamUrl, prompts, 1_000_000);
                double window = (System.nanoTime() - t0) / 1e9;
                long jobSamples = received.get() - samples0;
                double samplesPerSecond = jobSamples / window;
                out.println("interactive with the job:    " + during.line());
                out.printf(Locale.ROOT, "job during it: %d samples in %d batches over %.1f s (steps begun: %d)%n",
                        jobSamples, batches.get() - batches0, window, step.get() + 1);
                long p99Alone = alone.percentile(RequestTiming::ttftNanos, 99);
                long p99During = during.percentile(RequestTiming::ttftNanos, 99);
                out.printf(Locale.ROOT, "interactive_ttft_ms p50 %.1f -> %.1f, p99 %.1f -> %.1f (without -> with the"
                                + " job)%n", alone.percentile(RequestTiming::ttftNanos, 50) / 1e6,
                        during.percentile(RequestTiming::ttftNanos, 50) / 1e6, p99Alone / 1e6, p99During / 1e6);
                String ratio = p99Alone > 0 && p99During > 0
                        ? String.format(Locale.ROOT, "%.2f", (double) p99During / p99Alone) : "n/a";
                out.printf(Locale.ROOT, "jobs_samples_per_s=%.2f interactive_ttft_p99_ratio=%s%n", samplesPerSecond,
                        ratio);
            } finally {
                pullers.forEach(JobsPuller::stop);
            }
            List<String> failures = pullers.stream().map(JobsPuller::failure).filter(f -> f != null).toList();
            if (!failures.isEmpty()) {
                out.println("JOBS client failures: " + failures.get(0));
            }
            out.flush();
        }
        return 0;
    }

    private void checkOptions() {
        if (clients < 1 || clients > 256) {
            throw Commands.usageError(spec, "--clients must be a number from 1 to 256");
        }
        if (concurrency < 1 || concurrency > 256) {
            throw Commands.usageError(spec, "--concurrency must be a number from 1 to 256");
        }
        if (seconds < 1 || warmupSeconds < 0) {
            throw Commands.usageError(spec, "--seconds must be at least 1 and --warmup-seconds not negative");
        }
        if (outputTokens < 1 || outputTokens > 1024 || jobTokens < 1 || jobTokens > 1024) {
            throw Commands.usageError(spec, "--output-tokens and --job-tokens must be numbers from 1 to 1024");
        }
        if (promptTokens < 1 || batchSize < 1 || batchSize > 256 || samples < 1) {
            throw Commands.usageError(spec, "--prompt-tokens and --samples must be at least 1, --batch-size 1 to 256");
        }
    }

    /** The interactive closed loop for {@code --seconds}; request indexes from {@code first}. */
    private ServeLevel interactive(String url, ServeBenchCommand.Prompts prompts, int first)
            throws InterruptedException {
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        IntPredicate more = i -> System.nanoTime() < end;
        return ClosedLoop.run(concurrency, more, i -> send(url, prompts.prompt(first + i)));
    }

    private RequestTiming send(String url, long[] prompt) {
        long start = System.nanoTime();
        StreamTimer timer = new StreamTimer(start, System::nanoTime);
        try {
            return timer.result(PlainHttp.postForEvents(url, BenchCommand.requestBody(prompt, outputTokens),
                    REQUEST_TIMEOUT, timer), outputTokens);
        } catch (IOException e) {
            return RequestTiming.failed(e.toString());
        }
    }

    /** Imports a dataset of {@code --samples} prompts and defines the job over it (no API keys on this cluster). */
    private void defineJob(String url) throws IOException, InterruptedException {
        HttpClient http = HttpClient.newHttpClient();
        String dataset = IntStream.range(0, samples).mapToObj(i -> "{\"prompt\": \"Write a short line about item "
                + i + ":\"}").collect(Collectors.joining("\n"));
        HttpResponse<String> imported = http.send(HttpRequest.newBuilder(URI.create(url + "/api/v1/jobs/datasets"))
                .header("Content-Type", "application/x-ndjson").POST(HttpRequest.BodyPublishers.ofString(dataset))
                .build(), HttpResponse.BodyHandlers.ofString());
        Matcher sha = Pattern.compile("\"sha256\"\\s*:\\s*\"([0-9a-f]{64})\"").matcher(imported.body());
        if (imported.statusCode() != 201 || !sha.find()) {
            throw new CommandFailedException("importing the dataset: " + imported.statusCode() + " " + imported.body());
        }
        String job = String.format(Locale.ROOT, "{\"id\": \"bench-jobs\", \"dataset_sha256\": \"%s\", \"batch_size\":"
                + " %d, \"seed\": %d, \"max_tokens\": %d, \"temperature\": 1}", sha.group(1), batchSize, JOB_SEED,
                jobTokens);
        HttpResponse<String> defined = http.send(HttpRequest.newBuilder(URI.create(url + "/api/v1/jobs"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(job)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (defined.statusCode() != 201) {
            throw new CommandFailedException("defining the job: " + defined.statusCode() + " " + defined.body());
        }
    }

    /** Waits until the clients' first batch has come (their connections open, the job's first generations done). */
    private static void awaitFirstBatch(AtomicLong batches, List<JobsPuller> pullers) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
        while (batches.get() == 0) {
            String failure = pullers.stream().map(JobsPuller::failure).filter(f -> f != null).findFirst().orElse(null);
            if (failure != null) {
                throw new CommandFailedException("a JOBS client failed: " + failure);
            }
            if (System.nanoTime() > deadline) {
                throw new CommandFailedException("no batch of the job came within 10 minutes");
            }
            Thread.sleep(100);
        }
    }
}
