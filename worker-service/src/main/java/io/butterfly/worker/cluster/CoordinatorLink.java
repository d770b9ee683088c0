package io.butterfly.worker.cluster;

import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.coordinator.v1.HeartbeatAck;
import io.butterfly.proto.coordinator.v1.HeartbeatPing;
import io.butterfly.proto.coordinator.v1.LoadReport;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.worker.config.WorkerProperties;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import jakarta.annotation.PostConstruct;
import jakarta.annotation.PreDestroy;
import java.time.Instant;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * The worker's line to the coordinator: load reports (in order, retried on transport errors) and
 * heartbeats on one long-lived bidirectional stream. A broken stream is re-opened with exponential
 * backoff and jitter; the backoff resets once the coordinator acks again.
 */
@Component
public class CoordinatorLink {

    private static final Logger log = LoggerFactory.getLogger(CoordinatorLink.class);
    private static final long MIN_BACKOFF_MS = 50;
    private static final long MAX_BACKOFF_MS = 2_000;

    private final WorkerProperties props;
    private final PeerChannels channels;
    private final ExecutorService sender = Executors.newSingleThreadExecutor(r -> daemon(r, "coordinator-reports"));
    private final ScheduledExecutorService beats = Executors.newSingleThreadScheduledExecutor(
            r -> daemon(r, "coordinator-heartbeat"));
    private final AtomicLong sequence = new AtomicLong();
    private volatile Endpoint coordinator;
    private volatile long epoch;
    private volatile long loadedEpoch;
    private volatile Instant lastHeartbeatAck;
    // Written only on the heartbeat thread.
    private ClientCallStreamObserver<HeartbeatPing> stream;
    private Endpoint streamTarget;
    private volatile long backoffMs = MIN_BACKOFF_MS;
    private long reconnectAtMs;

    public CoordinatorLink(WorkerProperties props, PeerChannels channels) {
        this.props = props;
        this.channels = channels;
        if (props.coordinatorPort() > 0) {
            coordinator = Endpoint.newBuilder().setNodeId("coordinator").setHost(props.coordinatorHost())
                    .setGrpcPort(props.coordinatorPort()).build();
        }
    }

    @PostConstruct
    void startHeartbeats() {
        long period = Math.max(1, props.heartbeatMillis());
        beats.scheduleWithFixedDelay(this::beat, period, period, TimeUnit.MILLISECONDS);
    }

    public void attach(Endpoint coordinator, long epoch) {
        this.coordinator = coordinator;
        this.epoch = epoch;
    }

    /** The partition of {@code epoch} is loaded and READY (0: none); heartbeats carry it. */
    public void partitionReady(long epoch) {
        this.loadedEpoch = epoch;
    }

    /** Queues a report; reports reach the coordinator in the order they were made. */
    public void report(LoadReport report) {
        Endpoint target = coordinator;
        if (target == null) {
            return;
        }
        sender.execute(() -> {
            for (int attempt = 0; attempt < 5; attempt++) {
                try {
                    CoordinatorServiceGrpc.newBlockingStub(channels.get(target.getHost(), target.getGrpcPort()))
                            .withDeadlineAfter(5, TimeUnit.SECONDS)
                            .reportLoad(report.toBuilder().setNodeId(props.nodeId()).build());
                    return;
                } catch (StatusRuntimeException e) {
                    log.warn("load report {} to {} failed: {}", report.getPhase(), target.getNodeId(), e.getStatus());
                    sleep(200L << attempt);
                }
            }
        });
    }

    /** One heartbeat tick: (re)open the stream if needed, then send a ping. */
    private void beat() {
        try {
            Endpoint target = coordinator;
            if (target == null) {
                return;
            }
            if (stream != null && !sameAddress(target, streamTarget)) {
                stream.cancel("coordinator changed", null); // the new assignment names another coordinator
                stream = null;
            }
            if (stream == null) {
                if (System.currentTimeMillis() < reconnectAtMs) {
                    return;
                }
                stream = open(target);
                streamTarget = target;
            }
            stream.onNext(HeartbeatPing.newBuilder()
                    .setNodeId(props.nodeId())
                    .setEpoch(epoch)
                    .setSequence(sequence.incrementAndGet())
                    .setSentAtMs(System.currentTimeMillis())
                    .setLoadedEpoch(loadedEpoch)
                    .build());
        } catch (RuntimeException e) {
            log.debug("heartbeat failed: {}", e.toString());
            broken(stream);
        }
    }

    private ClientCallStreamObserver<HeartbeatPing> open(Endpoint target) {
        @SuppressWarnings("unchecked")
        ClientCallStreamObserver<HeartbeatPing>[] opened = new ClientCallStreamObserver[1];
        ManagedChannel channel = channels.get(target.getHost(), target.getGrpcPort());
        channel.resetConnectBackoff(); // our own backoff paces the reconnects
        CoordinatorServiceGrpc.newStub(channel)
                .heartbeatStream(new ClientResponseObserver<HeartbeatPing, HeartbeatAck>() {
                    private ClientCallStreamObserver<HeartbeatPing> self;

                    @Override
                    public void beforeStart(ClientCallStreamObserver<HeartbeatPing> requests) {
                        self = requests;
                        opened[0] = requests;
                    }

                    @Override
                    public void onNext(HeartbeatAck ack) {
                        if (lastHeartbeatAck == null || backoffMs != MIN_BACKOFF_MS) {
                            log.info("heartbeating to {} at {}:{} every {} ms", target.getNodeId(), target.getHost(),
                                    target.getGrpcPort(), props.heartbeatMillis());
                        }
                        lastHeartbeatAck = Instant.now();
                        beats.execute(() -> backoffMs = MIN_BACKOFF_MS);
                    }

                    @Override
                    public void onError(Throwable t) {
                        // Loud once, quiet while the coordinator stays unreachable (e.g. still starting).
                        if (backoffMs == MIN_BACKOFF_MS) {
                            log.info("heartbeat stream to {} broke: {}", target.getNodeId(), t.toString());
                        } else {
                            log.debug("heartbeat stream to {} broke: {}", target.getNodeId(), t.toString());
                        }
                        beats.execute(() -> broken(self));
                    }

                    @Override
                    public void onCompleted() {
                        beats.execute(() -> broken(self));
                    }
                });
        log.debug("heartbeat stream to {} at {}:{} opened (every {} ms)", target.getNodeId(), target.getHost(),
                target.getGrpcPort(), props.heartbeatMillis());
        return opened[0];
    }

    /** Forgets a broken stream (if it is still the current one) and schedules the reconnect. */
    private void broken(ClientCallStreamObserver<HeartbeatPing> which) {
        if (which == null || which != stream) {
            return;
        }
        stream = null;
        long jitter = ThreadLocalRandom.current().nextLong(backoffMs / 2 + 1);
        reconnectAtMs = System.currentTimeMillis() + backoffMs + jitter;
        backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
        try {
            which.cancel("stream broken", null);
        } catch (RuntimeException ignored) {
            // already closed
        }
    }

    private static boolean sameAddress(Endpoint a, Endpoint b) {
        return b != null && a.getHost().equals(b.getHost()) && a.getGrpcPort() == b.getGrpcPort();
    }

    public Endpoint coordinator() {
        return coordinator;
    }

    public Instant lastHeartbeatAck() {
        return lastHeartbeatAck;
    }

    @PreDestroy
    void stop() {
        beats.shutdownNow();
        ClientCallStreamObserver<HeartbeatPing> s = stream;
        if (s != null) {
            try {
                s.onCompleted();
            } catch (RuntimeException ignored) {
                // the channel may already be shut down
            }
        }
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
