package io.butterfly.harness;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.testsupport.Ports;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A whole Butterfly cluster in this JVM: discovery, the registry, workers and one to three coordinators, each the real
 * Spring application with the arguments its process would get (and its own {@code application.yaml}), talking gRPC
 * over grpc-java's in-process transport and Raft over loopback, with REST on loopback ports as usual. Starting one
 * takes seconds where processes take most of a minute, and a node can be killed, paused or cut off from the others
 * ({@link InProcessNetwork}) and started again.
 *
 * <p>Names as {@code ./butterfly up} gives them: "discovery", "registry", "worker-0", ..., "coordinator" (node id
 * coordinator-0), "coordinator-1", .... TLS is off (the in-process transport has no certificates to show: what mutual
 * TLS checks is tested on real sockets). One cluster at a time per JVM. Each worker computes on its own engine thread
 * (a bean of its context, as in its own process); libtorch's intra-op thread count is the process's.
 */
public final class InProcessCluster implements ClusterApi, AutoCloseable {

    static {
        // One JVM, one logging configuration (the tests'): each service would otherwise reset it as it starts. What
        // Spring Boot's set-up also did, once: java.util.logging (Tomcat's) into SLF4J.
        if (System.getProperty("org.springframework.boot.logging.LoggingSystem") == null) {
            System.setProperty("org.springframework.boot.logging.LoggingSystem", "none");
        }
        if (!SLF4JBridgeHandler.isInstalled()) {
            SLF4JBridgeHandler.removeHandlersForRootLogger();
            SLF4JBridgeHandler.install();
        }
    }

    /** The cluster open in this JVM, if any: one at a time (discovery's embedded store is named per node id). */
    private static final AtomicReference<InProcessCluster> OPEN = new AtomicReference<>();
    /** How long {@link #close} waits for the services to close. */
    static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(60);
    private static final Logger log = LoggerFactory.getLogger(InProcessCluster.class);

    private final Path workDir;
    private final InProcessNetwork network = new InProcessNetwork();
    /** In the order they were first started. */
    private final Map<String, ServiceNode> nodes = Collections.synchronizedMap(new LinkedHashMap<>());
    private final List<String> everyService = new ArrayList<>();
    private final int discoveryGrpc = Ports.free();
    private final int registryGrpc = Ports.free();
    private final int coordinatorGrpc = Ports.free();
    /** The gRPC ports of coordinator replicas 1 and 2, known before they start (the workers heartbeat to them). */
    private final List<Integer> replicaGrpc = List.of(Ports.free(), Ports.free());
    private int coordinatorGroup = 1;
    private String publisherKey;

    /**
     * Services keep their data under {@code workDir} (as {@code ./butterfly up} keeps it under .butterfly).
     *
     * @throws IllegalStateException while another in-process cluster of this JVM is open
     */
    public InProcessCluster(Path workDir) {
        if (!OPEN.compareAndSet(null, this)) {
            throw new IllegalStateException("another in-process cluster is open in this JVM: close it first");
        }
        this.workDir = workDir;
    }

    /** Adds {@code --key=value} arguments to every service started after this. */
    public void everyServiceWith(String... args) {
        everyService.addAll(List.of(args));
    }

    public Path registryStore() {
        return workDir.resolve("registry");
    }

    /**
     * The registry's publisher key, created here (in the registry's store, where the registry loads it) before the
     * registry starts, so workers and coordinators can be told to trust it without waiting.
     */
    public synchronized String publisherKey() {
        if (publisherKey == null) {
            publisherKey = NodeIdentity.loadOrCreate(registryStore().resolve("publisher")).publicKeyHex();
        }
        return publisherKey;
    }

    public void startDiscovery(String... extra) {
        start("discovery", Service.DISCOVERY, discoveryGrpc, join(List.of(
                "--butterfly.discovery.data-dir=" + workDir.resolve("discovery"),
                "--butterfly.discovery.hazelcast.port=" + Ports.free()), extra));
    }

    /** @param extra further {@code --key=value} arguments (e.g. its API keys) */
    public void startRegistry(Path modelDir, String... extra) {
        publisherKey();
        start("registry", Service.REGISTRY, registryGrpc, join(List.of(
                "--butterfly.registry.store-dir=" + registryStore(),
                "--butterfly.registry.import-dirs=" + modelDir), extra));
    }

    /** The worker argument that has it use the registry's store in place, as the launcher's workers do. */
    public String sharedStoreOption() {
        return "--butterfly.worker.registry.shared-store=" + registryStore();
    }

    /**
     * Workers started after this heartbeat from start-up to each of the {@code replicas} coordinators that
     * {@link #startCoordinatorGroup} will start, as the launcher's do (by default only to the first).
     */
    public void expectCoordinatorGroup(int replicas) {
        if (replicas < 1 || replicas > 3) {
            throw new IllegalArgumentException("one to three coordinators, got " + replicas);
        }
        coordinatorGroup = replicas;
    }

    /** @param extra further {@code --key=value} arguments (e.g. a memory limit) */
    public void startWorker(int i, String... extra) {
        List<String> args = new ArrayList<>(List.of(
                "--butterfly.worker.node-id=worker-" + i,
                "--butterfly.worker.data-dir=" + workDir.resolve("worker-" + i),
                "--butterfly.worker.discovery-port=" + discoveryGrpc,
                "--butterfly.worker.coordinator-port=" + coordinatorGrpc,
                "--butterfly.worker.trusted-publisher-keys=" + publisherKey()));
        if (coordinatorGroup > 1) {
            args.add("--butterfly.worker.coordinator-replicas=" + String.join(",", replicaGrpc.subList(0, coordinatorGroup - 1)
                    .stream().map(p -> "127.0.0.1:" + p).toList()));
        }
        List<String> all = join(args, extra);
        if (Stream.concat(all.stream(), everyService.stream()).noneMatch(a -> a.startsWith(JOIN_MAX_WAIT))) {
            all.add(JOIN_MAX_WAIT + "500ms");
        }
        start("worker-" + i, Service.WORKER, Ports.free(), all);
    }

    /**
     * The cap on a worker's waits between join attempts (5 s by default, plus up to half again): here 500 ms unless a
     * test sets it. Every service starts at once, and discovery is often up last; by then a worker's join waits
     * seconds, and a cluster's start-up waits for its workers' joins. The join is retried until admitted whatever
     * the waits, so only the timing changes; the default waits are {@code WorkerRetryPropertiesTest}'s.
     */
    static final String JOIN_MAX_WAIT = "--butterfly.worker.retry.join-max-wait=";

    /** One coordinator, "coordinator" (node id coordinator-0), its control log a Raft group of one. */
    public void startCoordinator(String modelId, int expectedWorkers, String... extra) {
        startCoordinatorGroup(modelId, expectedWorkers, 1, extra);
    }

    /**
     * {@code replicas} coordinators in one Raft group: "coordinator" (coordinator-0), "coordinator-1", ...; workers
     * report to coordinator-0 until an assignment names the leader.
     */
    public void startCoordinatorGroup(String modelId, int expectedWorkers, int replicas, String... extra) {
        List<Integer> grpc = new ArrayList<>(List.of(coordinatorGrpc));
        List<Integer> raft = new ArrayList<>(List.of(Ports.free()));
        for (int c = 1; c < replicas; c++) {
            grpc.add(replicaGrpc.get(c - 1));
            raft.add(Ports.free());
        }
        StringBuilder peers = new StringBuilder();
        StringBuilder endpoints = new StringBuilder();
        for (int c = 0; c < replicas; c++) {
            peers.append(c == 0 ? "" : ",").append("coordinator-").append(c).append("=127.0.0.1:").append(raft.get(c));
            endpoints.append(c == 0 ? "" : ",").append("coordinator-").append(c).append("=127.0.0.1:").append(grpc.get(c));
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
                    "--butterfly.coordinator.trusted-publisher-keys=" + publisherKey()));
            if (replicas > 1) {
                args.add("--butterfly.coordinator.raft.replica-grpc-endpoints=" + endpoints);
            }
            start(name, Service.COORDINATOR, grpc.get(c), join(args, extra));
        }
    }

    /** Discovery, registry, workers and coordinator, all at once: each retries until its peers are up. */
    public void startAll(Path modelDir, int workers) {
        startAll(modelDir, workers, i -> new String[0]);
    }

    /** {@link #startAll(Path, int)}, worker {@code i} started with the arguments {@code workerArgs} gives it. */
    public void startAll(Path modelDir, int workers, IntFunction<String[]> workerArgs) {
        startDiscovery();
        startRegistry(modelDir);
        for (int i = 0; i < workers; i++) {
            startWorker(i, workerArgs.apply(i));
        }
        startCoordinator(modelDir.getFileName().toString(), workers);
    }

    private void start(String name, Service service, int grpcPort, List<String> args) {
        List<String> all = new ArrayList<>(args);
        all.addAll(everyService);
        ServiceNode node = new ServiceNode(name, service, grpcPort, Ports.free(), all, network);
        if (nodes.putIfAbsent(name, node) != null) {
            throw new IllegalStateException(name + " was started already (restart it instead)");
        }
        node.start();
    }

    /**
     * Kills a service as SIGKILL would: every gRPC call to or from it ends at once (UNAVAILABLE to its peers), its
     * Raft replica stops and its REST port closes; nothing it does afterwards reaches anyone.
     */
    public void kill(String name) {
        node(name).kill();
    }

    /** Starts a killed (or stopped) service again with the same arguments, ports and data. */
    public void restart(String name) {
        node(name).start();
    }

    /** Stops a service as SIGTERM would: it shuts down in order, telling its peers what it tells them then. */
    public void stop(String name) {
        node(name).stop();
    }

    /**
     * Pauses a service as SIGSTOP would, seen from its peers: every gRPC message to or from it waits (its connections
     * stay open) until {@link #resume}. Raft between coordinators is not held.
     */
    public void pause(String name) {
        node(name);
        network.pause(name);
    }

    /** Ends a {@link #pause}: what waited is delivered, in order. */
    public void resume(String name) {
        node(name);
        network.open(name);
    }

    /**
     * Cuts a service off the others: every gRPC call to or from it ends with UNAVAILABLE, and new ones fail, until
     * {@link #heal}. Its REST port stays open (a test may still ask it); Raft between coordinators is not cut.
     */
    public void isolate(String name) {
        node(name);
        network.isolate(name);
    }

    /** Ends an {@link #isolate}. */
    public void heal(String name) {
        node(name);
        network.open(name);
    }

    /**
     * Moves a coordinator's or discovery's wall clock by {@code skew} (zero sets it right), as a host's clock stepped
     * by NTP: what it times by the wall clock (heartbeat arrivals, task times) jumps; its monotonic timers do not.
     */
    public void skewClock(String name, Duration skew) {
        node(name).clock.skew(skew);
    }

    /** A bean of a running service, for what its REST API does not show. */
    public <T> T bean(String name, Class<T> type) {
        return context(name).getBean(type);
    }

    /** A running service's application context (waiting for it to start). */
    public ConfigurableApplicationContext context(String name) {
        return node(name).context();
    }

    /** The gRPC port a service advertises (its in-process server's name is 127.0.0.1:port). */
    public int grpcPort(String name) {
        return node(name).grpcPort;
    }

    @Override
    public String urlOf(String name) {
        return "http://127.0.0.1:" + node(name).httpPort;
    }

    @Override
    public void checkNoServiceDied() {
        for (ServiceNode n : services()) {
            Throwable failure = n.failure();
            if (failure != null) {
                throw new IllegalStateException(n.name + " failed to start", failure);
            }
        }
    }

    @Override
    public String diagnostics() {
        StringBuilder sb = new StringBuilder("services (their logs are this JVM's):\n");
        for (ServiceNode n : services()) {
            sb.append("  ").append(n.name).append(": ").append(n.isRunning() ? "running" : "not running")
                    .append(", network ").append(network.reach(n.name).name().toLowerCase()).append('\n');
            Throwable failure = n.failure();
            if (failure != null) {
                StringWriter trace = new StringWriter();
                failure.printStackTrace(new PrintWriter(trace));
                sb.append(trace);
            }
        }
        return sb.toString();
    }

    private List<ServiceNode> services() {
        synchronized (nodes) {
            return List.copyOf(nodes.values());
        }
    }

    private ServiceNode node(String name) {
        ServiceNode n = nodes.get(name);
        if (n == null) {
            throw new IllegalArgumentException("no service " + name + " in this cluster: "
                    + services().stream().map(x -> x.name).toList());
        }
        return n;
    }

    private static List<String> join(List<String> args, String... extra) {
        List<String> all = new ArrayList<>(args);
        all.addAll(List.of(extra));
        return all;
    }

    /**
     * Stops every service: cut off first, so none waits on another while they all close. A service that takes longer
     * than {@link #CLOSE_TIMEOUT} to close is left to finish on its own (and said so), rather than holding up the tests.
     */
    @Override
    public void close() {
        try {
            for (ServiceNode n : services()) {
                try {
                    network.down(n.name);
                } catch (RuntimeException e) {
                    log.warn("cutting {} off as the cluster closes", n.name, e);
                }
            }
            List<Thread> closing = new ArrayList<>();
            for (ServiceNode n : services()) {
                closing.add(DaemonThreads.start("stop-" + n.name, n::stop));
            }
            long deadline = System.nanoTime() + CLOSE_TIMEOUT.toNanos();
            for (Thread t : closing) {
                try {
                    t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                if (t.isAlive()) {
                    log.warn("{} still closing after {}: left to finish on its own", t.getName(), CLOSE_TIMEOUT);
                }
            }
            network.close();
        } finally {
            // whatever went wrong closing this one, the next test's cluster must be able to open
            OPEN.compareAndSet(this, null);
        }
    }
}
