package io.butterfly.harness;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.grpc.PeerDialer;
import io.butterfly.coordinator.raft.ControlReplica;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;

/**
 * One service of an in-process cluster: its real Spring application, started in this JVM with the arguments its
 * process would get, serving gRPC in process under the address it advertises and REST on its own loopback port.
 * Started in the background, as a process would be; killed by cutting it off the network first and closing it after.
 */
final class ServiceNode {

    private static final Logger log = LoggerFactory.getLogger(ServiceNode.class);

    final String name;
    final Service service;
    final int grpcPort;
    final int httpPort;
    private final List<String> args;
    private final InProcessNetwork network;
    /** Its wall clock, for the services that take one (coordinator, discovery): kept across restarts, as a host's. */
    final SkewedClock clock = new SkewedClock();
    private volatile CompletableFuture<ConfigurableApplicationContext> running;
    private volatile CompletableFuture<Void> stopped = CompletableFuture.completedFuture(null);
    private volatile boolean ended;

    ServiceNode(String name, Service service, int grpcPort, int httpPort, List<String> args, InProcessNetwork network) {
        this.name = name;
        this.service = service;
        this.grpcPort = grpcPort;
        this.httpPort = httpPort;
        this.args = List.copyOf(args);
        this.network = network;
        network.register(name, "127.0.0.1", grpcPort);
    }

    /** Starts it in the background (after its previous run, if any, has closed). */
    void start() {
        if (running != null && !ended) {
            throw new IllegalStateException(name + " runs: kill or stop it before starting it again");
        }
        CompletableFuture<Void> previous = stopped;
        ended = false;
        running = previous.thenApplyAsync(v -> {
            network.open(name);
            return run();
        }, runnable -> DaemonThreads.start("start-" + name, runnable));
    }

    private ConfigurableApplicationContext run() {
        long started = System.nanoTime();
        List<String> all = new ArrayList<>(List.of(
                "--spring.config.location=" + service.ownConfig(),
                "--spring.main.banner-mode=off",
                "--butterfly.tls.enabled=false",
                // gRPC in process too, under the address it advertises, where its peers' dialers reach it. (It listens on
                // that port as well, as its process would: Spring gRPC starts an in-process server only beside a network
                // one; nothing in the cluster dials the port.)
                "--spring.grpc.server.inprocess.name=" + InProcessNetwork.serverName("127.0.0.1", grpcPort),
                "--spring.grpc.server.port=" + grpcPort,
                "--server.port=" + httpPort,
                // each context's meters are its own, as each process's are
                "--management.metrics.use-global-registry=false"));
        all.addAll(service.isolation());
        all.addAll(args);
        PeerDialer dialer = network.dialerFor(name);
        ConfigurableApplicationContext context = new SpringApplicationBuilder(service.application())
                .initializers(c -> {
                    // its peers' channels reconnect once its in-process server is up, not after their backoff
                    c.addApplicationListener(event -> {
                        if (event instanceof GrpcServerStartedEvent) {
                            try {
                                network.serverStarted(InProcessNetwork.serverName("127.0.0.1", grpcPort));
                            } catch (RuntimeException e) { // only a wake-up: never a reason for the start to fail
                                log.warn("{}: waking the channels to it failed", name, e);
                            }
                        }
                    });
                    c.getBeanFactory().registerSingleton("peerDialer", dialer);
                    if (service == Service.COORDINATOR || service == Service.DISCOVERY) {
                        c.getBeanFactory().registerSingleton("clock", clock);
                    }
                })
                .run(all.toArray(String[]::new));
        log.info("{} started in {} ms", name, (System.nanoTime() - started) / 1_000_000);
        return context;
    }

    /** Whether it started and has not been killed or stopped since. */
    boolean isRunning() {
        return running != null && running.isDone() && !running.isCompletedExceptionally() && !ended;
    }

    /** Why it failed to start, if it did. */
    Throwable failure() {
        if (running == null || !running.isCompletedExceptionally()) {
            return null;
        }
        try {
            running.join();
            return null;
        } catch (RuntimeException e) {
            return e.getCause() == null ? e : e.getCause();
        }
    }

    /** Its application context, once started. */
    ConfigurableApplicationContext context() {
        try {
            return running.get(5, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(name + ": interrupted while it started", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException(name + " did not start", e);
        }
    }

    /**
     * As a SIGKILL looks from outside: at once, every gRPC call to or from it ends (UNAVAILABLE) and new ones fail,
     * its Raft replica (a coordinator's) stops, and its REST port closes; then, in the background, its context
     * closes, with nothing it does on the way reaching anyone.
     */
    void kill() {
        if (running == null || ended) {
            throw new IllegalStateException(name + " does not run");
        }
        ended = true;
        network.down(name);
        ConfigurableApplicationContext context = context();
        if (service == Service.COORDINATOR) {
            // At once after the cut: the replica's Raft client closes first, so nothing the cut sets off here (steps
            // failing, streams pausing) is committed for it, as nothing would be from a dead process.
            context.getBean(ControlReplica.class).close();
        }
        if (context instanceof WebServerApplicationContext web) {
            web.getWebServer().stop(); // its REST clients see their connections drop
        }
        stopped = CompletableFuture.runAsync(() -> closeQuietly(context),
                runnable -> DaemonThreads.start("close-" + name, runnable));
        log.info("{} killed", name);
    }

    /** Closes it as a shutdown would (what it does on the way reaches its peers), and waits. */
    void stop() {
        CompletableFuture<ConfigurableApplicationContext> r = running;
        if (r == null) {
            return;
        }
        if (!ended) {
            ended = true;
            try {
                closeQuietly(r.get(5, TimeUnit.MINUTES));
            } catch (ExecutionException | TimeoutException failedToStart) {
                // nothing to close
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        stopped.join();
    }

    private void closeQuietly(ConfigurableApplicationContext context) {
        try {
            context.close();
        } catch (RuntimeException e) {
            log.warn("{}: closing its context failed", name, e);
        }
    }
}
