package io.butterfly.cli.cluster;

import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.home.ClusterApiKeys;
import io.butterfly.common.manifest.ModelIds;

import io.butterfly.cli.command.CommandFailedException;
import io.butterfly.cli.command.Log;
import io.butterfly.cli.generate.GenerateModelCommand;
import io.butterfly.cli.http.PlainHttp;
import io.butterfly.cli.process.FileTrees;
import io.butterfly.cli.process.JavaRuntime;
import io.butterfly.cli.process.ServiceImages;
import io.butterfly.cli.process.ServiceLaunch;
import io.butterfly.cli.process.ServiceProcess;
import io.butterfly.cli.process.ServiceSupervisor;
import io.butterfly.cli.tls.ClusterCertificates;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A cluster on this machine, each service its own process on loopback, as {@code up} lays it out
 * ({@link PortLayout}): discovery, the registry, the workers and the coordinator replicas. Starts it and waits for
 * READY, stops it, lists it.
 */
public final class Launcher {

    /** The directory's name is the model id the registry imports it as: one path segment of safe characters. */
    private static final Pattern MODEL_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
    private static final Pattern STARTED = Pattern.compile("Started [A-Za-z]+Application in");
    private static final Duration PUBLISHER_KEY_TIMEOUT = Duration.ofSeconds(120);

    private final ButterflyHome home;
    private final PortLayout ports;
    private final ServiceSupervisor supervisor;
    /** Set once an interrupted or failed {@code up} stops what it started: it starts nothing more. */
    private boolean stopping;
    /** The certificates of the cluster {@code up} starts; null: TLS off ({@code --insecure}). */
    private ClusterCertificates certificates;

    public Launcher(ButterflyHome home, PortLayout ports) {
        this.home = home;
        this.ports = ports;
        List<String> extra = ServiceJvm.extraFromEnvironment();
        this.supervisor = new ServiceSupervisor(ServiceImages.besideTheJars(home.root(), JavaRuntime.current()),
                new ServiceSupervisor.Settings(home.root(), home.processList(), home.logs(),
                        module -> ServiceJvm.options(home.root(), module, extra), Map.of()));
    }

    /** The cluster the environment names: {@code BUTTERFLY_HOME}, {@code BUTTERFLY_PORT_OFFSET}. */
    public static Launcher fromEnvironment() {
        return new Launcher(ButterflyHome.fromEnvironment(), PortLayout.fromEnvironment());
    }

    public ButterflyHome home() {
        return home;
    }

    public PortLayout ports() {
        return ports;
    }

    public ServiceSupervisor supervisor() {
        return supervisor;
    }

    /** Whether a cluster started from here runs. */
    public boolean running() {
        return !supervisor.running().isEmpty();
    }

    /**
     * Starts a cluster and returns once it is READY, its progress printed to {@code progress}. A failure (or an
     * interruption) from the first start on stops what was started, so no partial cluster blocks the next
     * {@code up}.
     *
     * @return when the last service logged that it had started (a worker may join and load before a probe of it
     *     answers): where the bootstrap's time begins
     */
    public Instant up(UpOptions options, PrintWriter progress) {
        synchronized (this) {
            stopping = false;
        }
        createDirectories(home.run(), home.logs());
        if (running()) {
            throw new CommandFailedException("a cluster is already running (./butterfly down first)");
        }
        supervisor.newList();
        certificates = options.insecure() ? null : ClusterCertificates.under(home.tls());
        if (options.insecure()) {
            Log.info("--insecure: TLS is off; every gRPC port is plaintext and unauthenticated (use on this machine only)");
        }
        options = options.withApiKeys(apiKeys(options.apiKeys()));
        Path model = checkModel(options.model() == null ? defaultModel() : options.model(), options.quantize());
        String modelId = ModelIds.imported(model, options.quantize());
        checkPortsFree(options.workerProcesses(), options.coordinators());
        if (options.pinWorkers()) {
            CorePinning.requireTaskset(System.getenv("PATH"));
        }
        Log.info("starting discovery, registry, " + options.workers() + " worker(s)"
                + (options.spares() == 0 ? "" : ", " + options.spares() + " spare(s)") + " and "
                + (options.coordinators() == 1 ? "the coordinator" : options.coordinators() + " coordinators")
                + " (model " + modelId + ")");
        try (ExitGuard stopOnFailure = ExitGuard.arm(() -> {
            synchronized (this) { // after a start under way, before the next: each started service is stopped
                stopping = true;
            }
            Log.info("up failed: stopping the services it started");
            down();
        })) {
            Instant servicesStarted = start(options, model, modelId, progress);
            stopOnFailure.disarm();
            return servicesStarted;
        }
    }

    /**
     * The key files the services check: the operator's, none ({@code --no-auth}, said loudly), or by default a user
     * key and an admin key made on first use under {@code .butterfly/keys}, as the cluster CA is.
     */
    UpOptions.ApiKeyFiles apiKeys(UpOptions.ApiKeyFiles asked) {
        if (asked.none()) {
            Log.info("API keys off (--no-auth): every endpoint of the coordinators and the registry is open to whoever"
                    + " reaches their ports (use on this machine only)");
            return asked;
        }
        if (!asked.made()) {
            return asked;
        }
        ClusterApiKeys.KeyFiles made = ClusterApiKeys.ensure(home.keys());
        Log.info("API keys: user key in " + made.userKeys() + ", admin key in " + made.adminKeys()
                + " (send Authorization: Bearer <key>; the client commands send the user key themselves; --no-auth: none)");
        return new UpOptions.ApiKeyFiles(made.userKeys(), made.adminKeys());
    }

    private Instant start(UpOptions options, Path model, String modelId, PrintWriter progress) {
        ServiceProcess discovery = start(new ServiceLaunch("discovery", "discovery", "discovery-0", "discovery-service",
                ports.discoveryHttp(), ports.discoveryGrpc(), "256m", List.of(
                        "--butterfly.discovery.data-dir=" + home.data("discovery"),
                        "--butterfly.discovery.hazelcast.port=" + ports.hazelcast())));
        List<String> registryArgs = new ArrayList<>(List.of(
                "--butterfly.registry.store-dir=" + home.registryStore(),
                "--butterfly.registry.import-dirs=" + model));
        if (options.quantize() != null) {
            registryArgs.add("--butterfly.registry.import-quantize=" + options.quantize());
        }
        if (options.apiKeys().adminKeys() != null) {
            registryArgs.add("--butterfly.registry.api-keys.admin-file=" + options.apiKeys().adminKeys());
        }
        ServiceProcess registry = start(new ServiceLaunch("registry", "registry", "registry-0", "model-registry-service",
                ports.registryHttp(), ports.registryGrpc(), "1g", registryArgs));
        awaitLive(discovery, startTimeout(120));
        // Coordinators and workers accept only manifests signed by this registry's publisher key.
        String publisher = awaitPublisherKey(registry);
        Log.info("registry publisher key " + publisher);

        List<ServiceProcess> awaited = new ArrayList<>();
        // Spares are workers too (worker-N, ...): the coordinator plans over the first --workers and keeps the rest
        // on standby for a lost or drained stage.
        for (int i = 0; i < options.workerProcesses(); i++) {
            awaited.add(start(worker(i, options, publisher)));
        }
        // Coordinator replicas form one Raft group (the control log); workers heartbeat every replica.
        List<String> peers = new ArrayList<>();
        List<String> endpoints = new ArrayList<>();
        for (int c = 0; c < options.coordinators(); c++) {
            peers.add("coordinator-" + c + "=127.0.0.1:" + ports.raft(c));
            endpoints.add("coordinator-" + c + "=127.0.0.1:" + ports.coordinatorGrpc(c));
        }
        List<ServiceProcess> coordinators = new ArrayList<>();
        for (int c = 0; c < options.coordinators(); c++) {
            coordinators.add(start(coordinator(c, options, modelId, publisher, String.join(",", peers),
                    String.join(",", endpoints))));
        }
        awaited.addAll(0, coordinators);

        // Watched from now on: the watch prints the workers' progress while their start-up is awaited.
        ReadyWatch.Running watch = ReadyWatch.start(ports.coordinatorUrl(), readyTimeout(), progress);
        try {
            // Every service, workers too: one that dies while starting is reported here with its log, not as a
            // READY timeout.
            for (ServiceProcess p : awaited) {
                awaitLive(p, startTimeout(180));
            }
            Instant servicesStarted = servicesStarted();
            if (!watch.await()) {
                throw new CommandFailedException("the cluster did not become READY (logs: " + home.logs() + ")");
            }
            return servicesStarted;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommandFailedException("interrupted while waiting for READY");
        } finally {
            watch.cancel();
            progress.flush();
        }
    }

    private ServiceLaunch worker(int i, UpOptions options, String publisher) {
        List<String> args = new ArrayList<>(List.of(
                "--butterfly.worker.node-id=worker-" + i,
                "--butterfly.worker.data-dir=" + home.data("worker-" + i),
                "--butterfly.worker.discovery-port=" + ports.discoveryGrpc(),
                "--butterfly.worker.coordinator-port=" + ports.coordinatorGrpc(0),
                "--butterfly.worker.trusted-publisher-keys=" + publisher));
        // Every replica heard from start-up: a worker that holds no stage (a spare, a restarted one) is told no replica
        // by an assignment, and its heartbeats must reach whichever one leads.
        if (options.coordinators() > 1) {
            List<String> others = new ArrayList<>();
            for (int c = 1; c < options.coordinators(); c++) {
                others.add("127.0.0.1:" + ports.coordinatorGrpc(c));
            }
            args.add("--butterfly.worker.coordinator-replicas=" + String.join(",", others));
        }
        // Each worker computes with every core the machine has (or, pinned, with its own): a request's stages compute
        // one after another, so each should use them all, and when several workers do compute at once (batches in
        // flight) their idle OpenMP threads sleep (below). With oneDNN's projections, three workers of two threads
        // on two cores beat three of one: bench ratio 0.88 vs 0.83, bench-serve 16.25 vs 12.70 output tokens/s at
        // concurrency 1 and 71.78 vs 69.11 at 16 (2026-11-28; with MKL's GEMM it was the other way, 33.7 vs 36.1
        // tokens/s). BUTTERFLY_WORKER_THREADS (which the workers read themselves) overrides.
        if (threadsOverride() == null) {
            args.add("--butterfly.worker.threads=" + threadsPerWorker(options.workers(), options.pinWorkers()));
        }
        // On one machine the workers see the registry's store: they copy their shards from it, checking each
        // against the signed manifest, instead of streaming them over loopback gRPC.
        if (options.transfer() == UpOptions.Transfer.SHARED) {
            args.add("--butterfly.worker.registry.shared-store=" + home.registryStore());
        }
        if (i < options.workerMemory().size() && !options.workerMemory().get(i).isEmpty()) {
            args.add("--butterfly.worker.memory-limit=" + options.workerMemory().get(i));
        }
        args.addAll(options.workerArgs(i));
        List<String> wrapper = new ArrayList<>();
        if (System.getenv("OMP_WAIT_POLICY") == null && oversubscribed(options.workers(), options.pinWorkers())) {
            wrapper.addAll(List.of("env", "OMP_WAIT_POLICY=PASSIVE"));
        }
        if (options.pinWorkers()) {
            wrapper.addAll(CorePinning.wrapper(i, Runtime.getRuntime().availableProcessors()));
        }
        return new ServiceLaunch("worker-" + i, "worker", "worker-" + i, "worker-service", ports.workerHttp(i),
                ports.workerGrpc(i), "1g", args, wrapper);
    }

    private ServiceLaunch coordinator(int c, UpOptions options, String modelId, String publisher, String peers,
                                      String endpoints) {
        // Replica 0 keeps the classic name and data directory.
        String name = c == 0 ? "coordinator" : "coordinator-" + c;
        Path data = home.data(name);
        // `up` starts a new cluster (fresh workers), so the Raft control log starts empty too; it survives a
        // coordinator restart within one cluster (it lives in <data-dir>/raft).
        FileTrees.delete(data.resolve("raft"));
        List<String> args = new ArrayList<>(List.of(
                "--butterfly.coordinator.node-id=coordinator-" + c,
                "--butterfly.coordinator.model-id=" + modelId,
                "--butterfly.coordinator.expected-workers=" + options.workers(),
                "--butterfly.coordinator.data-dir=" + data,
                "--butterfly.coordinator.discovery-port=" + ports.discoveryGrpc(),
                "--butterfly.coordinator.registry-port=" + ports.registryGrpc(),
                "--butterfly.coordinator.trusted-publisher-keys=" + publisher,
                "--butterfly.coordinator.raft.peers=" + peers,
                "--butterfly.coordinator.raft.replica-grpc-endpoints=" + endpoints));
        if (options.planner() != null) {
            args.add("--butterfly.coordinator.planner=" + options.planner());
        }
        if (options.apiKeys().keys() != null) {
            args.add("--butterfly.coordinator.api-keys.file=" + options.apiKeys().keys());
        }
        if (options.apiKeys().adminKeys() != null) {
            args.add("--butterfly.coordinator.api-keys.admin-file=" + options.apiKeys().adminKeys());
        }
        args.addAll(microBatchPolicy(options));
        args.addAll(options.coordinatorArgs());
        return new ServiceLaunch(name, "coordinator", "coordinator-" + c, "coordinator-service",
                ports.coordinatorHttp(c), ports.coordinatorGrpc(c), "512m", args);
    }

    private static final String MICRO_BATCHES = "--butterfly.coordinator.engine.micro-batches-in-flight";

    /**
     * One micro-batch in the pipeline at a time when the workers share the machine's cores (several, not pinned), unless
     * the coordinator's arguments say otherwise. Micro-batches in flight let every stage compute at once on machines of
     * their own; on shared cores they add no compute, only split the batch, so each weight is read once per micro-batch
     * instead of once a step: bench-serve on three workers, 2026-11-28, 45.82 and 43.94 (two runs) against 29.36
     * output tokens/s at concurrency 4, 92.44 and 71.56 against 71.04 at 16.
     */
    static List<String> microBatchPolicy(UpOptions options) {
        boolean shared = options.workers() > 1 && !options.pinWorkers();
        boolean asked = options.coordinatorArgs().stream().anyMatch(a -> a.startsWith(MICRO_BATCHES + "="));
        return shared && !asked ? List.of(MICRO_BATCHES + "=1") : List.of();
    }

    /**
     * Whether the workers' engine threads outnumber the cores. Then idle OpenMP threads must sleep at once
     * (OMP_WAIT_POLICY=PASSIVE) rather than spin on a core another worker needs (measured: spinning took
     * `bench --workers 3` from 0.87-0.90 to 0.83). Otherwise a worker's threads wait for each other between the
     * engine's many small operations, and sleeping costs a wake-up each time: one worker on two cores ran a decode
     * step of 16 sequences in 142 ms passive against 92 ms spinning. {@code OMP_WAIT_POLICY} set by the user wins.
     */
    static boolean oversubscribed(int workers, boolean pinned) {
        int threads;
        try {
            threads = Integer.parseInt(engineThreads(workers, pinned).trim());
        } catch (NumberFormatException e) {
            return true;
        }
        return (long) threads * workers > Runtime.getRuntime().availableProcessors();
    }

    /**
     * Engine threads per worker: every core of the machine, or, pinned, one: the one core {@link CorePinning} gives it.
     * (It was the machine's cores over the workers, so a lone pinned worker on two cores ran two OpenMP threads on its
     * one core, and bench-heads' k = 1 paid for that against k = 2's workers of one thread each.)
     */
    public static int threadsPerWorker(int workers, boolean pinned) {
        return pinned ? 1 : Runtime.getRuntime().availableProcessors();
    }

    /** The engine threads each of {@code workers} workers computes with, {@code BUTTERFLY_WORKER_THREADS} first. */
    public static String engineThreads(int workers, boolean pinned) {
        String override = threadsOverride();
        return override != null ? override : Integer.toString(threadsPerWorker(workers, pinned));
    }

    /** {@code BUTTERFLY_WORKER_THREADS}, which the workers read themselves; null when unset. */
    private static String threadsOverride() {
        String threads = System.getenv("BUTTERFLY_WORKER_THREADS");
        return threads == null || threads.isEmpty() ? null : threads;
    }

    private synchronized ServiceProcess start(ServiceLaunch launch) {
        if (stopping) {
            throw new CommandFailedException("stopping: " + launch.name() + " not started");
        }
        // Every service speaks mutual TLS with its own certificate from the cluster CA, or none with --insecure.
        return supervisor.start(launch.withArgs(certificates == null ? ClusterCertificates.PLAINTEXT_ARGUMENTS
                : certificates.arguments(launch)));
    }

    /** Stops everything {@code up} started. */
    public void down() {
        if (!Files.exists(home.processList())) {
            Log.info("nothing is running");
            return;
        }
        supervisor.stopAll();
        Log.info("stopped");
    }

    /** The started processes as a JSON array, one object per line. */
    public String ps() {
        StringBuilder json = new StringBuilder("[");
        List<ServiceProcess> listed = supervisor.listed();
        for (int i = 0; i < listed.size(); i++) {
            ServiceProcess p = listed.get(i);
            json.append(i == 0 ? "" : ",").append(String.format(
                    "%n  {\"name\": \"%s\", \"role\": \"%s\", \"pid\": %d, \"node_id\": \"%s\", \"http_port\": %d,"
                            + " \"grpc_port\": %d, \"alive\": %s}",
                    p.name(), p.role(), p.pid(), p.nodeId(), p.httpPort(), p.grpcPort(), supervisor.isRunning(p)));
        }
        return json.append(listed.isEmpty() ? "]" : String.format("%n]")).toString();
    }

    /** The demo model (the generator's demo preset), generated into the state directory the first time. */
    public Path defaultModel() {
        Path dir = home.model("demo");
        if (!Files.exists(dir.resolve("model.safetensors"))) {
            Log.info("generating the demo model in " + dir + " ...");
            PrintWriter err = new PrintWriter(System.err, true);
            GenerateModelCommand.generatePreset("demo", dir, err, err);
        }
        return dir;
    }

    /** A model directory with a config.json, or a GGUF file (served as it is: never quantized again). */
    private static Path checkModel(Path source, String quantize) {
        Path model = source.toAbsolutePath().normalize();
        boolean gguf = Files.isRegularFile(model) && model.getFileName().toString().toLowerCase(java.util.Locale.ROOT)
                .endsWith(".gguf");
        if (gguf && quantize != null) {
            throw new CommandFailedException("--model " + model + " is a GGUF file: its tensors are served as they are;"
                    + " drop --quantize");
        }
        if (!gguf && !Files.isDirectory(model)) {
            throw new CommandFailedException("--model " + source + " is neither a directory nor a .gguf file");
        }
        // What the registry's import needs of a directory, checked before anything starts: its import runs in the
        // background, and a directory it refuses would leave `up` waiting for a model that never comes.
        for (String needed : gguf ? List.<String>of() : List.of("config.json", "tokenizer.json")) {
            if (!Files.exists(model.resolve(needed))) {
                throw new CommandFailedException("--model " + model + " has no " + needed + " (a model directory holds"
                        + " config.json, tokenizer.json and its *.safetensors)");
            }
        }
        if (!gguf && !hasSafetensors(model)) {
            throw new CommandFailedException("--model " + model + " has no *.safetensors file");
        }
        String id = ModelIds.imported(model, quantize);
        if (!MODEL_ID.matcher(id).matches()) {
            throw new CommandFailedException("--model " + model + ": its name gives the model id '" + id
                    + "'; use letters, digits, '.', '_' or '-' (rename or link it)");
        }
        return model;
    }

    private static boolean hasSafetensors(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.anyMatch(f -> f.getFileName().toString().endsWith(".safetensors"));
        } catch (IOException e) {
            throw new UncheckedIOException("listing " + dir, e);
        }
    }

    /** All of them before anything starts: a port found taken half-way would leave a partial cluster. */
    private void checkPortsFree(int workers, int coordinators) {
        for (PortLayout.Use use : ports.ports(workers, coordinators)) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", use.port()), 1_000);
                throw new CommandFailedException("port " + use.port() + " (for " + use.owner() + ") is already in use");
            } catch (IOException free) {
                // nothing answers there
            }
        }
    }

    /**
     * How long a service may take to start: {@code seconds}, or {@code BUTTERFLY_START_TIMEOUT_SECONDS} when set (a
     * machine busy with other builds may start six JVMs several times slower).
     */
    private static Duration startTimeout(int seconds) {
        return secondsFromEnvironment("BUTTERFLY_START_TIMEOUT_SECONDS", seconds);
    }

    /**
     * How long {@code up} waits for READY once the services run: 10 minutes, or {@code BUTTERFLY_READY_TIMEOUT_SECONDS}.
     * A first start of a real model includes its import (the registry copies and hashes every byte once: an 8B in 4
     * bits took 11 minutes on a loaded machine with a slow disk), which a fixed wait cut short.
     */
    private static Duration readyTimeout() {
        return secondsFromEnvironment("BUTTERFLY_READY_TIMEOUT_SECONDS", 600);
    }

    private static Duration secondsFromEnvironment(String variable, int seconds) {
        String set = System.getenv(variable);
        if (set == null || set.isBlank()) {
            return Duration.ofSeconds(seconds);
        }
        if (!set.matches("[0-9]{1,5}") || Integer.parseInt(set) == 0) {
            throw new CommandFailedException(variable + " must be a number of seconds from 1 to 99999, got '" + set + "'");
        }
        return Duration.ofSeconds(Integer.parseInt(set));
    }

    /** Waits until the service's liveness probe answers; fails with its log's end if it exits first. */
    private void awaitLive(ServiceProcess p, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        String url = "http://127.0.0.1:" + p.httpPort() + "/actuator/health/liveness";
        while (!answers(url)) {
            checkRunning(p);
            if (System.nanoTime() > deadline) {
                throw new CommandFailedException(p.name() + " did not start within " + timeout.toSeconds() + " s (log: "
                        + supervisor.log(p.name()) + ")");
            }
            sleep(300);
        }
    }

    private void checkRunning(ServiceProcess p) {
        synchronized (this) {
            if (stopping) { // stopped with the others, no news
                throw new CommandFailedException("stopped while " + p.name() + " was starting");
            }
        }
        if (!supervisor.isRunning(p)) {
            supervisor.tail(p.name(), 30).forEach(System.err::println);
            throw new CommandFailedException(p.name() + " exited during start-up (log: " + supervisor.log(p.name()) + ")");
        }
    }

    private static boolean answers(String url) {
        try {
            int status = PlainHttp.get(url, Duration.ofSeconds(5)).status();
            return status >= 200 && status < 300;
        } catch (IOException notYet) {
            return false;
        }
    }

    /** The registry's publisher key (hex) once the registry has written it. */
    private String awaitPublisherKey(ServiceProcess registry) {
        Path file = home.registryStore().resolve("publisher").resolve("identity.pub");
        long deadline = System.nanoTime() + PUBLISHER_KEY_TIMEOUT.toNanos();
        try {
            while (!Files.exists(file) || Files.size(file) == 0) {
                checkRunning(registry);
                if (System.nanoTime() > deadline) {
                    throw new CommandFailedException("the registry wrote no publisher key (" + file + ") within "
                            + PUBLISHER_KEY_TIMEOUT.toSeconds() + "s");
                }
                sleep(500);
            }
            return Files.readString(file).replaceAll("\\s", "");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The latest moment a listed service logged that it had started ({@code Started ...Application in}), or now if
     * none did.
     */
    private Instant servicesStarted() {
        Instant latest = null;
        for (ServiceProcess p : supervisor.listed()) {
            Optional<Instant> started = startedAt(supervisor.log(p.name()));
            if (started.isPresent() && (latest == null || started.get().isAfter(latest))) {
                latest = started.get();
            }
        }
        return latest == null ? Instant.now() : latest;
    }

    /** The timestamp (the line's first field) of the first "Started ...Application in" line of a log. */
    static Optional<Instant> startedAt(Path log) {
        if (!Files.exists(log)) {
            return Optional.empty();
        }
        try (Stream<String> lines = Files.lines(log)) {
            return lines.filter(l -> STARTED.matcher(l).find()).findFirst().flatMap(Launcher::timestamp);
        } catch (IOException | UncheckedIOException e) {
            return Optional.empty();
        }
    }

    private static Optional<Instant> timestamp(String line) {
        try {
            return Optional.of(OffsetDateTime.parse(line.strip().split("\\s+", 2)[0]).toInstant());
        } catch (DateTimeParseException e) {
            return Optional.empty();
        }
    }

    private static void createDirectories(Path... dirs) {
        try {
            for (Path d : dirs) {
                Files.createDirectories(d);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommandFailedException("interrupted");
        }
    }
}
