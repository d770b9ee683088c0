package io.butterfly.worker.gateway;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.error.Backoff;
import io.butterfly.common.error.RetrySettings;
import io.butterfly.common.grpc.OneWayStreams;
import io.butterfly.common.retry.Retries;
import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.coordinator.v1.HeartbeatPing;
import io.butterfly.proto.coordinator.v1.LoadReport;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.partition.Coordinators;
import io.butterfly.worker.pipeline.Outcomes;
import io.github.resilience4j.retry.Retry;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's line to the coordinators: load reports (in order, retried on transport errors, to the
 * assigning coordinator first and then to the other replicas); heartbeats on one long-lived stream per
 * coordinator replica, so a newly elected leader already knows every worker's heartbeat history; and the
 * outcomes of steps, one-way, to the replica waiting for each.
 */
public class CoordinatorGateway implements Coordinators, Outcomes {

    private volatile java.util.function.Supplier<io.butterfly.worker.engine.PrefixCacheStats> prefixCache =
            () -> io.butterfly.worker.engine.PrefixCacheStats.OFF;

    private static final Logger log = LoggerFactory.getLogger(CoordinatorGateway.class);

    private final String nodeId;
    private final long heartbeatMillis;
    private final OneWayStreams.Channels channels;
    /** A load report's tries (docs/architecture.md, retries): 5, 200 ms apart, doubling up to 3.2 s. */
    public static final RetrySettings REPORT_RETRY = new RetrySettings(5, Duration.ofMillis(200), Duration.ofMillis(3200));
    private final RetrySettings reportRetry;
    private final ExecutorService sender = Executors.newSingleThreadExecutor(DaemonThreads.named("coordinator-reports"));
    private final ScheduledExecutorService beats = Executors.newSingleThreadScheduledExecutor(
            DaemonThreads.named("coordinator-heartbeat"));
    private final AtomicLong sequence = new AtomicLong();
    private volatile Endpoint coordinator;
    private volatile List<Endpoint> replicas = List.of();
    private volatile long epoch;
    private volatile long loadedEpoch;
    // Heartbeat thread only: one stream per replica address.
    private final Map<String, HeartbeatStream> streams = new LinkedHashMap<>();
    private final OneWayStreams<StepOutcome, String> outcomes;

    /**
     * @param heartbeatMillis period of heartbeats (docs/state-machines.md §2.2: every 100 ms)
     * @param coordinator     the coordinator to heartbeat to from start-up, or null: only once an assignment names
     *                        one (a restarted worker needs it to be seen coming back)
     */
    public CoordinatorGateway(String nodeId, long heartbeatMillis, Endpoint coordinator, OneWayStreams.Channels channels) {
        this(nodeId, heartbeatMillis, coordinator, List.of(), channels, REPORT_RETRY);
    }

    /**
     * @param otherReplicas the other coordinator replicas, heartbeated to from start-up as well (with {@code
     *                      coordinator}): a worker that holds no stage is told no replica by an assignment
     * @param reportRetry   how a load report is retried on transport errors, each try at the next replica
     */
    public CoordinatorGateway(String nodeId, long heartbeatMillis, Endpoint coordinator, List<Endpoint> otherReplicas,
                              OneWayStreams.Channels channels, RetrySettings reportRetry) {
        this.nodeId = nodeId;
        this.reportRetry = reportRetry;
        this.heartbeatMillis = heartbeatMillis;
        this.channels = channels;
        this.outcomes = new OneWayStreams<>(channels,
                (ch, r) -> CoordinatorServiceGrpc.newStub(ch).stepOutcomes(OneWayStreams.answers(r)),
                StepOutcome::getTaskId,
                (address, recent, status) -> log.warn("outcome stream to coordinator {} broke: {}", address, status));
        if (coordinator != null) {
            this.coordinator = coordinator;
            List<Endpoint> all = new ArrayList<>(List.of(coordinator));
            otherReplicas.stream().filter(r -> !sameAddress(r, coordinator)).forEach(all::add);
            replicas = List.copyOf(all);
        }
    }

    public void startHeartbeats() {
        long period = Math.max(1, heartbeatMillis);
        beats.scheduleWithFixedDelay(this::beat, period, period, TimeUnit.MILLISECONDS);
    }

    @Override
    public void attach(Endpoint coordinator, List<Endpoint> replicas, long epoch) {
        List<Endpoint> all = new ArrayList<>();
        all.add(coordinator);
        replicas.stream().filter(r -> !sameAddress(r, coordinator)).forEach(all::add);
        this.coordinator = coordinator;
        this.replicas = List.copyOf(all);
        this.epoch = epoch;
        // The assigning replica is up: a stream still backing off from its start-up (up to 2-3 s) reconnects
        // now, so a partition that turns READY is heard from at once.
        try {
            beats.execute(() -> {
                streams.values().forEach(HeartbeatStream::reconnectNow);
                beat();
            });
        } catch (RejectedExecutionException stopping) {
            // the gateway is stopping
        }
    }

    /** Stops heartbeating and reporting (the worker left the cluster): the next tick closes every stream. */
    public void detach() {
        this.replicas = List.of();
        this.coordinator = null;
        this.loadedEpoch = 0;
    }

    @Override
    public void partitionReady(long epoch) {
        this.loadedEpoch = epoch;
    }

    @Override
    public void report(io.butterfly.worker.partition.LoadReport report) {
        List<Endpoint> targets = replicas;
        if (targets.isEmpty()) {
            return;
        }
        LoadReport mine = GatewayMessages.loadReport(nodeId, report);
        Retry retry = Retries.onFailure("load-report", reportRetry, Backoff.Jitter.NONE,
                CoordinatorGateway::undelivered);
        sender.execute(() -> {
            // Any replica takes a report into the replicated control log; the assigning one is tried first.
            int[] tries = {0};
            try {
                retry.executeRunnable(() -> {
                    Endpoint target = targets.get(tries[0]++ % targets.size());
                    try {
                        CoordinatorServiceGrpc.newBlockingStub(channels.get(target.host(), target.grpcPort()))
                                .withDeadlineAfter(5, TimeUnit.SECONDS)
                                .reportLoad(mine);
                    } catch (StatusRuntimeException e) {
                        log.warn("load report {} to {} failed: {}", report.phase(), target.nodeId(), e.getStatus());
                        throw e;
                    }
                });
            } catch (StatusRuntimeException e) {
                if (undelivered(e)) {
                    log.warn("load report {} not delivered after {} tries; the coordinator's assignment timeout covers"
                            + " it", report.phase(), tries[0]);
                }
            }
        });
    }

    /**
     * Whether a report's try failed before a replica judged it (the transport, a replica busy or electing): worth
     * another try. A replica's refusal (a stale epoch, a spare's audit assignment the plan does not name) is final:
     * tried again it is refused again, and the reports behind it, such as the next epoch's READY, wait on one thread
     * meanwhile (about 3 s a refused report: an audit spare's reports delayed a re-plan's READY by 17 s).
     */
    static boolean undelivered(Throwable failure) {
        return failure instanceof StatusRuntimeException e && switch (e.getStatus().getCode()) {
            case UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, UNKNOWN, CANCELLED -> true;
            default -> false;
        };
    }

    @Override
    public void send(Endpoint coordinator, io.butterfly.worker.pipeline.StepOutcome outcome) {
        send(coordinator.host(), coordinator.grpcPort(), coordinator.nodeId(), GatewayMessages.outcome(outcome));
    }

    /** The outcome of a step the next stage's stream lost, to the coordinator the step named. */
    void send(io.butterfly.proto.worker.v1.Endpoint coordinator, StepOutcome outcome) {
        send(coordinator.getHost(), coordinator.getGrpcPort(), coordinator.getNodeId(), outcome);
    }

    /** Best effort: a coordinator that does not hear of a step times it out. */
    private void send(String host, int port, String coordinator, StepOutcome outcome) {
        try {
            outcomes.send(host, port, outcome);
        } catch (StatusRuntimeException e) {
            log.warn("outcome of step {} of task {} not delivered to {}: {}", outcome.getStep(), outcome.getTaskId(),
                    coordinator, e.getStatus());
        }
    }

    /** Where the heartbeats read the stage's prefix cache from (the partition manager sets it). */
    public void prefixCacheFrom(java.util.function.Supplier<io.butterfly.worker.engine.PrefixCacheStats> source) {
        prefixCache = source;
    }

    private static io.butterfly.proto.coordinator.v1.PrefixCacheSummary prefixCacheSummary(
            io.butterfly.worker.engine.PrefixCacheStats s) {
        return io.butterfly.proto.coordinator.v1.PrefixCacheSummary.newBuilder().setEnabled(s.enabled())
                .setBlocks(s.blocks()).setBlockTokens(io.butterfly.worker.engine.PrefixCacheStats.blockTokens())
                .setBytes(s.bytes()).setQueriedTokens(s.queriedTokens()).setHitTokens(s.hitTokens())
                .setEvictions(s.evictions()).build();
    }

    /** One heartbeat tick: a ping on every replica's stream; streams of replicas no longer named are closed. */
    private void beat() {
        try {
            List<Endpoint> targets = replicas;
            Map<String, Endpoint> wanted = new LinkedHashMap<>();
            targets.forEach(t -> wanted.put(t.address(), t));
            streams.entrySet().removeIf(e -> {
                if (!wanted.containsKey(e.getKey())) {
                    e.getValue().close(false); // the new assignment names other coordinators
                    return true;
                }
                return false;
            });
            if (targets.isEmpty()) {
                return;
            }
            HeartbeatPing ping = HeartbeatPing.newBuilder()
                    .setNodeId(nodeId)
                    .setEpoch(epoch)
                    .setSequence(sequence.incrementAndGet())
                    .setSentAtMs(System.currentTimeMillis())
                    .setLoadedEpoch(loadedEpoch)
                    .setPrefixCache(prefixCacheSummary(prefixCache.get()))
                    .build();
            long period = Math.max(1, heartbeatMillis);
            wanted.forEach((addr, target) -> streams
                    .computeIfAbsent(addr, a -> new HeartbeatStream(target, channels, beats, period))
                    .send(ping));
        } catch (RuntimeException e) {
            log.debug("heartbeat tick failed: {}", e.toString());
        } catch (Error e) {
            // Thrown out of a scheduled task, it would cancel every later beat without a word, and the
            // coordinator would declare this worker FAILED while it still serves.
            log.error("heartbeat tick failed; the next tick tries again", e);
        }
    }

    private static boolean sameAddress(Endpoint a, Endpoint b) {
        return b != null && a.address().equals(b.address());
    }

    public Endpoint coordinator() {
        return coordinator;
    }

    /** Each replica's address and its latest ack (null: none yet), for the worker's REST state. */
    public Map<String, Instant> heartbeatAcks() {
        Map<String, Instant> out = new LinkedHashMap<>();
        streamsSnapshot().forEach(s -> out.put(s.target().nodeId() + "@" + s.target().address(), s.lastAck()));
        return out;
    }

    private List<HeartbeatStream> streamsSnapshot() {
        try {
            return beats.submit(() -> List.copyOf(streams.values())).get(1, TimeUnit.SECONDS);
        } catch (Exception e) {
            return List.of();
        }
    }

    /** Ends every stream cleanly (on shutdown). */
    public void close() {
        outcomes.closeAll();
        try {
            beats.submit(() -> streams.values().forEach(s -> s.close(true))).get(1, TimeUnit.SECONDS);
        } catch (Exception ignored) {
            // shutting down anyway
        }
        beats.shutdownNow();
    }
}
