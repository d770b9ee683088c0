package io.butterfly.it;

import io.butterfly.cli.cluster.ServiceJvm;
import io.butterfly.cli.process.JavaRuntime;
import io.butterfly.cli.process.ServiceImages;
import io.butterfly.cli.process.ServiceLaunch;
import io.butterfly.cli.process.ServiceProcess;
import io.butterfly.cli.process.ServiceSupervisor;
import io.butterfly.cli.process.Signal;
import io.butterfly.cli.tls.ClusterCertificates;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.testsupport.Ports;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import java.util.Map;

/**
 * Starts the real services as separate JVM processes on loopback (free ports) with the tools' process supervisor,
 * as {@code ./butterfly up} does (mutual TLS, each service with its own certificate from a cluster CA made for the
 * test), and stops them afterwards. Tests that need no separate processes use {@link InProcessCluster}, which answers
 * the same {@link ClusterApi}.
 */
final class LocalCluster implements ClusterApi, AutoCloseable {

    static final Path ROOT = Path.of("").toAbsolutePath().getParent();
    /**
     * The services' images (extracted jars; no class-data archives, which cost the suite's first cluster more than
     * they saved), apart from the launcher's: a test never extracts anew what a cluster started by
     * {@code ./butterfly up} runs from.
     */
    static final ServiceImages IMAGES = ServiceImages.extractedUnder(ROOT.resolve("integration-tests/target/service-images"),
            ROOT, JavaRuntime.current());
    /** Every service JVM's options, then C1 only: short-lived test services start sooner. */
    private static final List<String> JVM_OPTIONS =
            Stream.concat(ServiceJvm.COMMON.stream(), Stream.of("-XX:TieredStopAtLevel=1")).toList();

    private final Path workDir;
    private final ServiceSupervisor supervisor;
    private final ClusterCertificates certificates;
    private String publisherKey;
    final int discoveryGrpc = Ports.free();
    final int registryGrpc = Ports.free();
    final int registryHttp = Ports.free();
    final int coordinatorHttp = Ports.free();
    final int coordinatorGrpc = Ports.free();
    /** The coordinator's Raft (control log) port: its own free port, not the default gRPC port + 20. */
    final int coordinatorRaft = Ports.free();
    /** Arguments every service started from now on gets (e.g. where to export traces). */
    private final List<String> everyService = new ArrayList<>();

    /** Services log to {@code <workDir>/<name>.log}. */
    LocalCluster(Path workDir) {
        this.workDir = workDir;
        this.certificates = ClusterCertificates.under(workDir.resolve("tls"));
        this.supervisor = new ServiceSupervisor(IMAGES, new ServiceSupervisor.Settings(ROOT, workDir.resolve("procs"),
                workDir, module -> JVM_OPTIONS, Map.of("DJL_CACHE_DIR", ROOT.resolve(".butterfly/djl-cache").toString(),
                        "OMP_WAIT_POLICY", "PASSIVE")));
    }

    Path registryStore() {
        return workDir.resolve("registry");
    }

    void startDiscovery() {
        start("discovery", "discovery-0", "discovery-service", "256m", Ports.free(), discoveryGrpc,
                "--butterfly.discovery.data-dir=" + workDir.resolve("discovery"),
                "--butterfly.discovery.hazelcast.port=" + Ports.free()); // its embedded membership store
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

    /** Adds {@code --key=value} arguments to every service started after this. */
    void everyServiceWith(String... args) {
        everyService.addAll(List.of(args));
    }

    /** @param extra further {@code --key=value} arguments (e.g. its API keys) */
    void startRegistry(Path modelDir, String... extra) {
        publisherKey();
        List<String> args = new ArrayList<>(List.of("--butterfly.registry.store-dir=" + registryStore(),
                "--butterfly.registry.import-dirs=" + modelDir));
        args.addAll(List.of(extra));
        start("registry", "registry-0", "model-registry-service", "768m", registryHttp, registryGrpc,
                args.toArray(String[]::new));
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
        start("worker-" + i, "worker-" + i, "worker-service", "768m", Ports.free(), Ports.free(), args.toArray(String[]::new));
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
        start("coordinator", "coordinator-0", "coordinator-service", "512m", coordinatorHttp, coordinatorGrpc,
                args.toArray(String[]::new));
    }

    /**
     * {@code replicas} coordinators in one Raft group, named "coordinator" (coordinator-0, the ports above),
     * "coordinator-1", ...; workers report to coordinator-0 until an assignment names the leader.
     */
    void startCoordinatorGroup(String modelId, int expectedWorkers, int replicas, String... extra) {
        List<int[]> ports = new ArrayList<>(); // http, grpc, raft
        ports.add(new int[] {coordinatorHttp, coordinatorGrpc, coordinatorRaft});
        for (int c = 1; c < replicas; c++) {
            ports.add(new int[] {Ports.free(), Ports.free(), Ports.free()});
        }
        StringBuilder peers = new StringBuilder();
        StringBuilder endpoints = new StringBuilder();
        for (int c = 0; c < replicas; c++) {
            peers.append(c == 0 ? "" : ",").append("coordinator-").append(c).append("=127.0.0.1:").append(ports.get(c)[2]);
            endpoints.append(c == 0 ? "" : ",").append("coordinator-").append(c).append("=127.0.0.1:").append(ports.get(c)[1]);
        }
        for (int c = 0; c < replicas; c++) {
            String name = c == 0 ? "coordinator" : "coordinator-" + c;
            List<String> args = new ArrayList<>(List.of(
                    "--butterfly.coordinator.node-id=coordinator-" + c,
                    "--butterfly.coordinator.model-id=" + modelId,
                    "--butterfly.coordinator.expected-workers=" + expectedWorkers,
                    "--butterfly.coordinator.discovery-port=" + discoveryGrpc,
                    "--butterfly.coordinator.registry-port=" + registryGrpc,
                    "--butterfly.coordinator.data-dir=" + workDir.resolve(name),
                    "--butterfly.coordinator.raft.peer-id=coordinator-" + c,
                    "--butterfly.coordinator.raft.peers=" + peers,
                    "--butterfly.coordinator.raft.replica-grpc-endpoints=" + endpoints,
                    "--butterfly.coordinator.trusted-publisher-keys=" + publisherKey()));
            args.addAll(List.of(extra));
            start(name, "coordinator-" + c, "coordinator-service", "512m", ports.get(c)[0], ports.get(c)[1],
                    args.toArray(String[]::new));
        }
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

    private void start(String name, String nodeId, String module, String heap, int httpPort, int grpcPort,
                       String... args) {
        String role = module.replace("model-", "").replace("-service", "");
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(everyService);
        ServiceLaunch launch = new ServiceLaunch(name, role, nodeId, module, httpPort, grpcPort, heap, all);
        supervisor.start(launch.withArgs(certificates.arguments(launch)));
    }

    /** The cluster's CA and its services' certificates (a test issues its own clients' from it). */
    ClusterCertificates certificates() {
        return certificates;
    }

    /** The gRPC port of a service ("worker-1", "coordinator", ...). */
    int grpcPort(String name) {
        return supervisor.listed(name).orElseThrow().grpcPort();
    }

    /** The pid of a service ("worker-1", "coordinator", ...). */
    long pid(String name) {
        return supervisor.listed(name).orElseThrow().pid();
    }

    /** Sends a signal to a service (STOP and CONT pause and resume it; TERM and KILL end it). */
    void signal(String name, Signal signal) {
        if (!supervisor.signal(supervisor.listed(name).orElseThrow(), signal)) {
            throw new IllegalStateException(name + " does not run");
        }
    }

    /** SIGKILLs a service; it no longer counts as exited early. */
    void kill(String name) {
        supervisor.kill(name);
    }

    /** Starts a killed service again with the same command line (same ports and id), appending to its log. */
    void restart(String name) {
        supervisor.restart(name);
    }

    /** A service's own HTTP address. */
    @Override
    public String urlOf(String name) {
        return "http://127.0.0.1:" + supervisor.listed(name).orElseThrow().httpPort();
    }

    @Override
    public String coordinatorUrl() {
        return "http://127.0.0.1:" + coordinatorHttp;
    }

    @Override
    public void checkNoServiceDied() {
        if (!supervisor.exited().isEmpty()) {
            throw new IllegalStateException("a service exited early:\n" + tails());
        }
    }

    @Override
    public String diagnostics() {
        return tails();
    }

    /** The last {@code lines} lines a service logged. */
    List<String> logTail(String name, int lines) {
        return supervisor.tail(name, lines);
    }

    String tails() {
        StringBuilder sb = new StringBuilder();
        for (ServiceProcess p : supervisor.listed()) {
            sb.append("==== ").append(p.name()).append(".log\n");
            supervisor.tail(p.name(), 25).forEach(l -> sb.append(l).append('\n'));
        }
        return sb.toString();
    }

    /** Stops every service. */
    @Override
    public void close() {
        supervisor.stopAll();
    }
}
