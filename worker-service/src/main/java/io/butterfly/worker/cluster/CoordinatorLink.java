package io.butterfly.worker.cluster;

import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.coordinator.v1.HeartbeatRequest;
import io.butterfly.proto.coordinator.v1.LoadReport;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.worker.config.WorkerProperties;
import io.grpc.StatusRuntimeException;
import java.time.Instant;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * The worker's line to the coordinator that assigned its partition: load reports (in order, retried
 * on transport errors) and periodic heartbeats.
 */
@Component
public class CoordinatorLink {

    private static final Logger log = LoggerFactory.getLogger(CoordinatorLink.class);

    private final WorkerProperties props;
    private final PeerChannels channels;
    private final ExecutorService sender = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "coordinator-reports");
        t.setDaemon(true);
        return t;
    });
    private volatile Endpoint coordinator;
    private volatile long epoch;
    private volatile Instant lastHeartbeatAck;

    public CoordinatorLink(WorkerProperties props, PeerChannels channels) {
        this.props = props;
        this.channels = channels;
    }

    public void attach(Endpoint coordinator, long epoch) {
        this.coordinator = coordinator;
        this.epoch = epoch;
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

    @Scheduled(fixedDelayString = "${butterfly.worker.heartbeat-millis:1000}")
    void heartbeat() {
        Endpoint target = coordinator;
        if (target == null) {
            return;
        }
        try {
            CoordinatorServiceGrpc.newBlockingStub(channels.get(target.getHost(), target.getGrpcPort()))
                    .withDeadlineAfter(1, TimeUnit.SECONDS)
                    .heartbeat(HeartbeatRequest.newBuilder().setNodeId(props.nodeId()).setEpoch(epoch).build());
            lastHeartbeatAck = Instant.now();
        } catch (StatusRuntimeException e) {
            log.debug("heartbeat failed: {}", e.getStatus());
        }
    }

    public Endpoint coordinator() {
        return coordinator;
    }

    public Instant lastHeartbeatAck() {
        return lastHeartbeatAck;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
