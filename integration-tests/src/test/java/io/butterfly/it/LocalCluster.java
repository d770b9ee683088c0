package io.butterfly.it;

import io.butterfly.common.crypto.NodeIdentity;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Starts the real services as separate JVM processes on loopback (free ports), the way
 * {@code ./butterfly up} does, and stops them afterwards.
 */
final class LocalCluster implements AutoCloseable {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final Path ROOT = Path.of("").toAbsolutePath().getParent();
    /** Test services listen in [PORTS_FROM, PORTS_TO): clear of the launcher's 8080-9190 and the ephemeral range. */
    private static final int PORTS_FROM = 20000;
    private static final int PORTS_TO = 32000;

    private final Path workDir;
    private final List<Process> processes = new ArrayList<>();
    private String publisherKey;
    private final List<Path> logs = new ArrayList<>();
    private final Map<String, Process> byName = new HashMap<>();
    /** Processes recording a class-data archive (they write it on the way out). */
    private final Set<Process> recorders = new HashSet<>();
    private final Map<String, List<String>> commands = new HashMap<>();
    private final Map<String, Integer> httpPorts = new HashMap<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    final int discoveryGrpc = freePort();
    final int registryGrpc = freePort();
    final int registryHttp = freePort();
    final int coordinatorHttp = freePort();
    final int coordinatorGrpc = freePort();
    /** The coordinator's Raft (control log) port: its own free port, not the default gRPC port + 20. */
    final int coordinatorRaft = freePort();

    LocalCluster(Path workDir) {
        this.workDir = workDir;
    }

    Path registryStore() {
        return workDir.resolve("registry");
    }

    void startDiscovery() {
        start("discovery", "discovery-service", "256m", freePort(), discoveryGrpc,
                "--butterfly.discovery.data-dir=" + workDir.resolve("discovery"),
                "--butterfly.discovery.hazelcast.port=" + freePort()); // its embedded membership store
    }

    /**
     * The registry's publisher key, created here (in the registry's store, where the registry loads it)
     * before the registry starts, so workers and coordinator can be told to trust it without waiting.
     */
    synchronized String publisherKey() {
        if (publisherKey == null) {
            publisherKey = NodeIdentity.loadOrCreate(registryStore().resolve("publisher")).publicKeyHex();
        }
        return publisherKey;
    }

    void startRegistry(Path modelDir) {
        publisherKey();
        start("registry", "model-registry-service", "768m", registryHttp, registryGrpc,
                "--butterfly.registry.store-dir=" + registryStore(),
                "--butterfly.registry.import-dirs=" + modelDir);
    }

    /** The worker argument that has it use the registry's store in place, as the launcher's workers do. */
    String sharedStoreOption() {
        return "--butterfly.worker.registry.shared-store=" + registryStore();
    }

    /** @param extra further {@code --key=value} arguments (e.g. a memory limit) */
    void startWorker(int i, String... extra) {
        List<String> args = new ArrayList<>(List.of(
                "--butterfly.worker.node-id=worker-" + i,
                "--butterfly.worker.data-dir=" + workDir.resolve("worker-" + i),
                "--butterfly.worker.discovery-port=" + discoveryGrpc,
                "--butterfly.worker.coordinator-port=" + coordinatorGrpc,
                "--butterfly.worker.trusted-publisher-keys=" + publisherKey()));
        args.addAll(List.of(extra));
        start("worker-" + i, "worker-service", "768m", freePort(), freePort(), args.toArray(String[]::new));
    }

    /** @param extra further {@code --key=value} arguments (e.g. the planner) */
    void startCoordinator(String modelId, int expectedWorkers, String... extra) {
        List<String> args = new ArrayList<>(List.of(
                "--butterfly.coordinator.model-id=" + modelId,
                "--butterfly.coordinator.expected-workers=" + expectedWorkers,
                "--butterfly.coordinator.discovery-port=" + discoveryGrpc,
                "--butterfly.coordinator.registry-port=" + registryGrpc,
                "--butterfly.coordinator.data-dir=" + workDir.resolve("coordinator"),
                "--butterfly.coordinator.raft.peer-id=coordinator-0",
                "--butterfly.coordinator.raft.peers=coordinator-0=127.0.0.1:" + coordinatorRaft,
                "--butterfly.coordinator.trusted-publisher-keys=" + publisherKey()));
        args.addAll(List.of(extra));
        start("coordinator", "coordinator-service", "512m", coordinatorHttp, coordinatorGrpc,
                args.toArray(String[]::new));
    }

    /**
     * {@code replicas} coordinators in one Raft group, named "coordinator" (coordinator-0, the ports above),
     * "coordinator-1", ...; workers report to coordinator-0 until an assignment names the leader.
     */
    void startCoordinatorGroup(String modelId, int expectedWorkers, int replicas) {
        List<int[]> ports = new ArrayList<>(); // http, grpc, raft
        ports.add(new int[] {coordinatorHttp, coordinatorGrpc, coordinatorRaft});
        for (int c = 1; c < replicas; c++) {
            ports.add(new int[] {freePort(), freePort(), freePort()});
        }
        StringBuilder peers = new StringBuilder();
        StringBuilder endpoints = new StringBuilder();
        for (int c = 0; c < replicas; c++) {
            peers.append(c == 0 ? "" : ",").append("coordinator-").append(c).append("=127.0.0.1:").append(ports.get(c)[2]);
            endpoints.append(c == 0 ? "" : ",").append("coordinator-").append(c).append("=127.0.0.1:").append(ports.get(c)[1]);
        }
        for (int c = 0; c < replicas; c++) {
            String name = c == 0 ? "coordinator" : "coordinator-" + c;
            start(name, "coordinator-service", "512m", ports.get(c)[0], ports.get(c)[1],
                    "--butterfly.coordinator.node-id=coordinator-" + c,
                    "--butterfly.coordinator.model-id=" + modelId,
                    "--butterfly.coordinator.expected-workers=" + expectedWorkers,
                    "--butterfly.coordinator.discovery-port=" + discoveryGrpc,
                    "--butterfly.coordinator.registry-port=" + registryGrpc,
                    "--butterfly.coordinator.data-dir=" + workDir.resolve(name),
                    "--butterfly.coordinator.raft.peer-id=coordinator-" + c,
                    "--butterfly.coordinator.raft.peers=" + peers,
                    "--butterfly.coordinator.raft.replica-grpc-endpoints=" + endpoints,
                    "--butterfly.coordinator.trusted-publisher-keys=" + publisherKey());
        }
    }

    /** POST on a service's own HTTP port. */
    Reply postTo(String name, String path, String json) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPorts.get(name) + path))
                .timeout(Duration.ofMinutes(5)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    /** Discovery, registry, workers and coordinator, all at once: each retries until its peers are up. */
    void startAll(Path modelDir, int workers) {
        startAll(modelDir, workers, i -> new String[0]);
    }

    /** {@link #startAll(Path, int)}, worker {@code i} started with the arguments {@code workerArgs} gives it. */
    void startAll(Path modelDir, int workers, java.util.function.IntFunction<String[]> workerArgs) {
        startDiscovery();
        startRegistry(modelDir);
        for (int i = 0; i < workers; i++) {
            startWorker(i, workerArgs.apply(i));
        }
        startCoordinator(modelDir.getFileName().toString(), workers);
    }

    private void start(String name, String module, String heap, int httpPort, int grpcPort, String... args) {
        List<String> cmd = new ArrayList<>(List.of(ServiceImages.javaBin(), "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dai.djl.offline=true", "-Xmx" + heap));
        cmd.addAll(ServiceImages.cdsOptions(module, name));
        cmd.addAll(List.of("-jar", ServiceImages.jar(module).toString(),
                "--server.port=" + httpPort, "--spring.grpc.server.port=" + grpcPort));
        cmd.addAll(List.of(args));
        commands.put(name, cmd);
        httpPorts.put(name, httpPort);
        launch(name, cmd, false);
    }

    private void launch(String name, List<String> cmd, boolean append) {
        Path log = workDir.resolve(name + ".log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(append ? ProcessBuilder.Redirect.appendTo(log.toFile()) : ProcessBuilder.Redirect.to(log.toFile()));
        pb.environment().put("DJL_CACHE_DIR", ROOT.resolve(".butterfly/djl-cache").toString());
        pb.environment().put("OMP_WAIT_POLICY", "PASSIVE");
        try {
            Process p = pb.start();
            processes.add(p);
            byName.put(name, p);
            if (ServiceImages.records(cmd)) {
                recorders.add(p);
            }
            if (!logs.contains(log)) {
                logs.add(log);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The running process of a service ("worker-1", "coordinator", ...). */
    Process process(String name) {
        return byName.get(name);
    }

    /** SIGKILLs a service; it no longer counts as exited early. */
    void kill(String name) throws InterruptedException {
        Process p = byName.remove(name);
        processes.remove(p);
        p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }

    /** Starts a killed service again with the same command line (same ports and id), appending to its log. */
    void restart(String name) {
        launch(name, commands.get(name), true);
    }

    String coordinatorUrl() {
        return "http://127.0.0.1:" + coordinatorHttp;
    }

    /** Polls {@code /api/v1/system/state} until the predicate holds. */
    JsonNode awaitState(Predicate<JsonNode> done, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        JsonNode last = null;
        while (System.nanoTime() < deadline) {
            for (Process p : processes) {
                if (!p.isAlive()) {
                    throw new IllegalStateException("a service exited early:\n" + tails());
                }
            }
            try {
                last = get("/api/v1/system/state").json();
                if (done.test(last)) {
                    return last;
                }
            } catch (IOException e) {
                // not up yet
            }
            Thread.sleep(300);
        }
        throw new IllegalStateException("timed out; last state " + last + "\n" + tails());
    }

    record Reply(int status, String contentType, String body) {
        JsonNode json() {
            return JSON.readTree(body);
        }
    }

    Reply get(String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(coordinatorUrl() + path)).timeout(Duration.ofSeconds(10)).GET().build());
    }

    Reply post(String path, String json) throws IOException, InterruptedException {
        return post(path, json, "*/*");
    }

    Reply post(String path, String json, String accept) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(coordinatorUrl() + path)).timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json").header("Accept", accept)
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    /** GET on a service's own HTTP port ({@code "worker-0"}, ...). */
    Reply getFrom(String name, String path) throws IOException, InterruptedException {
        return getAbsolute("http://127.0.0.1:" + httpPorts.get(name) + path);
    }

    Reply getAbsolute(String url) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).GET().build());
    }

    private Reply send(HttpRequest request) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r.headers().firstValue("Content-Type").orElse(""), r.body());
    }

    String tails() {
        StringBuilder sb = new StringBuilder();
        for (Path log : logs) {
            try {
                List<String> lines = Files.readAllLines(log);
                sb.append("==== ").append(log.getFileName()).append('\n');
                lines.subList(Math.max(0, lines.size() - 25), lines.size()).forEach(l -> sb.append(l).append('\n'));
            } catch (IOException e) {
                sb.append("(no log ").append(log).append(")\n");
            }
        }
        return sb.toString();
    }

    @Override
    public void close() {
        processes.forEach(Process::destroy);
        for (Process p : processes) {
            try {
                if (!p.waitFor(recorders.contains(p) ? 90 : 15, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        ServiceImages.settle();
    }

    /** Where the next {@link #freePort()} search starts: random per test JVM, so parallel builds rarely meet. */
    private static final AtomicInteger NEXT_PORT =
            new AtomicInteger(PORTS_FROM + ThreadLocalRandom.current().nextInt(PORTS_TO - PORTS_FROM));

    /**
     * A port nothing listens on, below the kernel's ephemeral range (32768-60999). The services bind it
     * seconds later (a JVM starts slowly); a port from the ephemeral range may meanwhile be taken as the
     * local end of some outgoing connection, and the service then fails with "Address already in use".
     */
    static int freePort() {
        for (int tries = 0; tries < PORTS_TO - PORTS_FROM; tries++) {
            int port = PORTS_FROM + Math.floorMod(NEXT_PORT.getAndIncrement() - PORTS_FROM, PORTS_TO - PORTS_FROM);
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(false);
                s.bind(new InetSocketAddress(port));
                return port;
            } catch (IOException busy) {
                // taken: try the next one
            }
        }
        throw new IllegalStateException("no free port in " + PORTS_FROM + "-" + PORTS_TO);
    }
}
