package io.butterfly.worker.gateway;

import io.butterfly.common.error.Backoff;
import io.butterfly.common.grpc.OneWayStreams;
import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.coordinator.v1.HeartbeatAck;
import io.butterfly.proto.coordinator.v1.HeartbeatPing;
import io.butterfly.worker.cluster.Endpoint;
import io.grpc.ManagedChannel;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One long-lived heartbeat stream to one coordinator replica. A broken stream is re-opened with exponential
 * backoff and jitter; the backoff resets once the replica acks again. All methods except the gRPC callbacks
 * run on the heartbeat thread ({@code beats}), which the callbacks hand their work to.
 */
final class HeartbeatStream {

    private static final Logger log = LoggerFactory.getLogger(HeartbeatStream.class);
    /** Between reconnects: 50 ms doubling to 2 s, plus up to half again so workers spread out. */
    static final Backoff RECONNECT = new Backoff(Duration.ofMillis(50), Duration.ofSeconds(2), Backoff.Jitter.ADD_HALF);

    private final Endpoint target;
    private final OneWayStreams.Channels channels;
    private final Executor beats;
    private final long periodMs;
    private ClientCallStreamObserver<HeartbeatPing> stream;
    /** Reconnects since the replica last acked: how long the next one waits. */
    private volatile int failures;
    private long reconnectAtMs;
    private volatile Instant lastAck;

    HeartbeatStream(Endpoint target, OneWayStreams.Channels channels, Executor beats, long periodMs) {
        this.target = target;
        this.channels = channels;
        this.beats = beats;
        this.periodMs = periodMs;
    }

    Endpoint target() {
        return target;
    }

    Instant lastAck() {
        return lastAck;
    }

    /** Sends one ping, (re)opening the stream first if it is down and its backoff has passed. */
    void send(HeartbeatPing ping) {
        try {
            if (stream == null) {
                if (System.currentTimeMillis() < reconnectAtMs) {
                    return;
                }
                stream = open();
            }
            stream.onNext(ping);
        } catch (RuntimeException e) {
            log.debug("heartbeat to {} failed: {}", target.nodeId(), e.toString());
            broken(stream);
        }
    }

    /** Ends the stream cleanly (the replica sees a completed stream, not a crash). */
    void close(boolean graceful) {
        ClientCallStreamObserver<HeartbeatPing> s = stream;
        stream = null;
        if (s == null) {
            return;
        }
        try {
            if (graceful) {
                s.onCompleted();
            } else {
                s.cancel("coordinator replica dropped", null);
            }
        } catch (RuntimeException ignored) {
            // the channel may already be shut down
        }
    }

    private ClientCallStreamObserver<HeartbeatPing> open() {
        @SuppressWarnings("unchecked")
        ClientCallStreamObserver<HeartbeatPing>[] opened = new ClientCallStreamObserver[1];
        ManagedChannel channel = channels.get(target.host(), target.grpcPort());
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
                        if (lastAck == null || failures != 0) {
                            log.info("heartbeating to {} at {}:{} every {} ms", target.nodeId(), target.host(),
                                    target.grpcPort(), periodMs);
                        }
                        lastAck = Instant.now();
                        onBeatThread(() -> failures = 0);
                    }

                    @Override
                    public void onError(Throwable t) {
                        // Loud once, quiet while the replica stays unreachable (e.g. still starting).
                        if (failures == 0) {
                            log.info("heartbeat stream to {} broke: {}", target.nodeId(), t.toString());
                        } else {
                            log.debug("heartbeat stream to {} broke: {}", target.nodeId(), t.toString());
                        }
                        onBeatThread(() -> broken(self));
                    }

                    @Override
                    public void onCompleted() {
                        onBeatThread(() -> broken(self));
                    }
                });
        return opened[0];
    }

    /** Hands a callback's work to the heartbeat thread; once the worker shuts down there is nothing left to do. */
    private void onBeatThread(Runnable work) {
        try {
            beats.execute(work);
        } catch (RejectedExecutionException shuttingDown) {
            // the gateway is stopping
        }
    }

    /** The replica is known to be up (it just assigned a partition): the next ping reconnects at once. */
    void reconnectNow() {
        reconnectAtMs = 0;
        failures = 0;
    }

    /** Forgets a broken stream (if it is still the current one) and schedules the reconnect. */
    private void broken(ClientCallStreamObserver<HeartbeatPing> which) {
        if (which == null || which != stream) {
            return;
        }
        stream = null;
        reconnectAtMs = System.currentTimeMillis() + RECONNECT.millis(failures++);
        try {
            which.cancel("stream broken", null);
        } catch (RuntimeException ignored) {
            // already closed
        }
    }
}
