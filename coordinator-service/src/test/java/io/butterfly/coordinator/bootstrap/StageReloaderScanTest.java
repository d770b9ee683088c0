package io.butterfly.coordinator.bootstrap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.config.LivenessProperties;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.control.Liveness;
import io.butterfly.coordinator.control.LivenessMonitor;
import io.butterfly.coordinator.control.TestLeadership;
import io.butterfly.coordinator.gateway.worker.WorkerGateway;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.AssignPartitionResponse;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.testsupport.InProcessGrpc;
import io.grpc.stub.StreamObserver;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The leader's reload scan: a DEGRADED pipeline's stage that is JOINED and UNLOADED is sent its assignment again,
 * at most once every 30 s per node; loaded, loading or FAILED stages, a pipeline that is not DEGRADED, and a
 * replica that does not lead send nothing. The state comes from the real reducer (an in-memory control log), the
 * assignments go through the real worker gateway to one fake worker per node, served in-process, and the scan's
 * clock is moved by hand.
 */
class StageReloaderScanTest {

    private static final long TERM = 7;
    private static final List<String> WORKERS = List.of("w1", "w2", "w3", "w4");

    /** A worker that only records the assignments it is sent. */
    static final class FakeWorker extends WorkerServiceGrpc.WorkerServiceImplBase {
        final List<AssignPartitionRequest> assigned = new CopyOnWriteArrayList<>();
        InProcessGrpc server;

        @Override
        public void assignPartition(AssignPartitionRequest request, StreamObserver<AssignPartitionResponse> response) {
            assigned.add(request);
            response.onNext(AssignPartitionResponse.newBuilder().setAccepted(true).build());
            response.onCompleted();
        }
    }

    /** Each fake worker is reached at its node id as host name. */
    private final Map<String, FakeWorker> workers = new LinkedHashMap<>();
    /** This replica leads, unless a test makes it a follower before the state is built. */
    private InMemoryControlLog control = new InMemoryControlLog(TestLeadership.leading("coordinator-0", TERM));
    private final WorkerGateway gateway = new WorkerGateway(new WorkerGateway.Settings("coordinator-0", "127.0.0.1",
            9083, "127.0.0.1", 9081, List.of(), 120), (host, port) -> workers.get(host).server.channel());
    private long nowNanos = 1_000_000_000L;
    private StageReloader reloader;

    @BeforeEach
    void startWorkers() {
        for (String id : WORKERS) {
            FakeWorker w = new FakeWorker();
            w.server = InProcessGrpc.serving(w);
            workers.put(id, w);
        }
    }

    @AfterEach
    void stop() {
        if (reloader != null) {
            reloader.close();
        }
        gateway.close();
        workers.values().forEach(w -> w.server.close());
        control.close();
    }

    @Test
    void theLeaderResendsAnUnloadedJoinedStageItsAssignmentAtMostEveryThirtySecondsPerNode() {
        degradedPipeline();
        assertThat(node("w1")).isEqualTo(WorkerState.JOINED + "/" + PartitionState.UNLOADED);
        assertThat(node("w2")).isEqualTo(WorkerState.READY + "/" + PartitionState.READY);
        assertThat(node("w3")).isEqualTo(WorkerState.JOINED + "/" + PartitionState.DOWNLOADING);
        assertThat(node("w4")).startsWith(WorkerState.FAILED + "/");
        reloader = reloader();

        scanAt(0);
        awaitAssigned("w1", 1);
        assertThat(workers.get("w1").assigned.get(0)).isEqualTo(AssignPartitionRequest.newBuilder()
                .setModelId("tiny").setLayers(LayerRange.newBuilder().setStart(0).setEnd(1))
                .setHasEmbedding(true).setHasHead(false).setEpoch(1).setTerm(TERM)
                .setRegistry(Endpoint.newBuilder().setNodeId("registry").setHost("127.0.0.1").setGrpcPort(9081))
                .setCoordinator(Endpoint.newBuilder().setNodeId("coordinator-0").setHost("127.0.0.1").setGrpcPort(9083))
                .addCoordinatorReplicas(Endpoint.newBuilder().setNodeId("coordinator-0").setHost("127.0.0.1")
                        .setGrpcPort(9083))
                .build());

        // w4 comes back without its partition: its first reload is due at once, w1's second is not yet. Reloads
        // run one after another in pipeline order, so a second one for w1 would have arrived before w4's.
        apply(new ClusterCommand.NodeRecovered("w4", false, 9_000, 9_010));
        scanAt(29);
        awaitAssigned("w4", 1);
        assertThat(workers.get("w4").assigned.get(0).getLayers().getStart()).isEqualTo(3);
        assertThat(workers.get("w1").assigned).hasSize(1);

        scanAt(31); // 31 s after w1's reload, 2 s after w4's
        awaitAssigned("w1", 2);
        scanAt(60); // 29 s after w1's second, 31 s after w4's first
        awaitAssigned("w4", 2);

        assertQuietly(Map.of("w1", 2, "w2", 0, "w3", 0, "w4", 2));
    }

    @Test
    void aReplicaThatDoesNotLeadSendsNothing() {
        control.close();
        control = new InMemoryControlLog(TestLeadership.following("coordinator-1", "coordinator-0", TERM));
        degradedPipeline();
        reloader = reloader();
        scanAt(0);
        scanAt(31);
        assertQuietly(Map.of("w1", 0, "w2", 0, "w3", 0, "w4", 0));
    }

    @Test
    void aBootstrappingStageIsLeftToTheBootstrapForAMinuteThenSentItsAssignmentAgain() {
        assigned(); // every stage JOINED and UNLOADED, the first load still to come
        assertThat(control.state().system()).isNotEqualTo(SystemState.DEGRADED);
        assertThat(WORKERS).allSatisfy(id -> assertThat(node(id)).isEqualTo("JOINED/UNLOADED"));
        reloader = reloader();
        scanAt(0);
        assertQuietly(Map.of("w1", 0, "w2", 0, "w3", 0, "w4", 0));

        // Loading starts within a second of an assignment: a stage still unloaded a minute later never got it.
        apply(new ClusterCommand.LoadProgressed("w2", 1, PartitionState.DOWNLOADING, 0.1, "layer-1.safetensors", 10));
        scanAt(59);
        assertQuietly(Map.of("w1", 0, "w2", 0, "w3", 0, "w4", 0));
        scanAt(61);
        awaitAssigned("w1", 1);
        awaitAssigned("w3", 1);
        awaitAssigned("w4", 1);
        scanAt(100);
        scanAt(122);
        awaitAssigned("w1", 2);
        assertQuietly(Map.of("w1", 2, "w2", 0, "w3", 2, "w4", 2));
    }

    @Test
    void aLoadThatFailedForAReasonAnotherAttemptCanMendIsRetriedEveryMinuteEvenWhileBootstrapping() {
        assigned();
        apply(new ClusterCommand.LoadFailed("w1", 1, "TIMEOUT", "registry unreachable after 9 attempts", 5));
        apply(new ClusterCommand.LoadFailed("w2", 1, "CHECKSUM_MISMATCH", "layer-1.safetensors: expected aa, got bb", 5));
        apply(new ClusterCommand.LoadFailed("w3", 1, "INSUFFICIENT_MEMORY", "needs 2 GiB", 5));
        apply(new ClusterCommand.LoadProgressed("w4", 1, PartitionState.DOWNLOADING, 0.1, "layer-3.safetensors", 5));
        assertThat(control.state().system()).isEqualTo(SystemState.BOOTSTRAPPING);
        assertThat(node("w1")).isEqualTo(WorkerState.FAILED + "/" + PartitionState.FAILED);
        reloader = reloader();

        scanAt(0);
        awaitAssigned("w1", 1);
        assertThat(workers.get("w1").assigned.get(0).getEpoch()).isEqualTo(1);
        scanAt(59);
        assertQuietly(Map.of("w1", 1, "w2", 0, "w3", 0, "w4", 0));
        scanAt(61);
        awaitAssigned("w1", 2);

        // Its new attempt is reported: loading again, it is no longer retried.
        apply(new ClusterCommand.LoadProgressed("w1", 1, PartitionState.DOWNLOADING, 0.1, "layer-0.safetensors", 70));
        assertThat(node("w1")).isEqualTo(WorkerState.JOINED + "/" + PartitionState.DOWNLOADING);
        scanAt(200);
        assertQuietly(Map.of("w1", 2, "w2", 0, "w3", 0, "w4", 0));
    }

    @Test
    void aLoadFailureLoggedWithoutACodeDoesNotStopTheScan() {
        // The control log's LoadFailed carries its error code optionally (ControlCommandMapper reads it as null).
        assigned();
        apply(new ClusterCommand.LoadFailed("w1", 1, null, "no code recorded", 5));
        apply(new ClusterCommand.LoadFailed("w2", 1, "TIMEOUT", "registry unreachable", 5));
        reloader = reloader();

        scanAt(0);
        awaitAssigned("w2", 1);
    }

    private StageReloader reloader() {
        LivenessProperties liveness = new LivenessProperties(8.0, 4.0, 200, Duration.ofMillis(100),
                Duration.ofMillis(800), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(25),
                Duration.ofMillis(250), Duration.ofSeconds(10));
        LivenessMonitor monitor = new LivenessMonitor(control, new Liveness(liveness.detectorSettings(),
                Clock.systemUTC()), liveness.monitorSettings(), Clock.systemUTC());
        StageReloader r = new StageReloader(control, gateway, monitor);
        r.nanoTime = () -> nowNanos;
        return r;
    }

    /** One scan, {@code seconds} after the first. */
    private void scanAt(long seconds) {
        nowNanos = 1_000_000_000L + TimeUnit.SECONDS.toNanos(seconds);
        reloader.reloadUnloadedStages();
    }

    /** w1..w4 assigned one layer each (w1 with the embedding, w4 with the head), nothing loaded yet. */
    private void assigned() {
        apply(new ClusterCommand.Bootstrap("tiny", 4, 1));
        apply(new ClusterCommand.ModelResolved("tiny", "root", 2));
        for (String id : WORKERS) {
            apply(new ClusterCommand.NodeJoined(new NodeInfo(id, "worker", id, 9000, 8000, 4, 8L << 30, 12.5, "cpu"), 3));
        }
        apply(new ClusterCommand.PartitionsAssigned(1, List.of(new StageAssignment("w1", 0, 1, true, false),
                new StageAssignment("w2", 1, 2, false, false), new StageAssignment("w3", 2, 3, false, false),
                new StageAssignment("w4", 3, 4, false, true)), 4));
    }

    /**
     * Served READY, then: w1 restarted (JOINED, UNLOADED), w2 untouched (READY), w3 restarted and already loading
     * again (JOINED, DOWNLOADING), w4 FAILED; the system DEGRADED.
     */
    private void degradedPipeline() {
        assigned();
        for (String id : WORKERS) {
            apply(new ClusterCommand.LoadCompleted(id, 1, "c-" + id, 5));
        }
        apply(new ClusterCommand.WeightsValidated(new WeightValidation(1, WeightValidation.Status.VALID, "root",
                "partition-root", WORKERS, List.of(), List.of(), 6), 6));
        assertThat(control.state().system()).isEqualTo(SystemState.READY);
        for (String id : List.of("w1", "w3", "w4")) {
            apply(new ClusterCommand.NodeSuspected(id, 100, 4.2, "no heartbeat for 500 ms", 600));
            apply(new ClusterCommand.NodeFailed(id, 100, 8.1, "no heartbeat for 1400 ms", 1_500));
        }
        apply(new ClusterCommand.NodeRecovered("w1", false, 9_000, 9_010));
        apply(new ClusterCommand.NodeRecovered("w3", false, 9_000, 9_010));
        apply(new ClusterCommand.LoadProgressed("w3", 1, PartitionState.DOWNLOADING, 0.5, "layer-2.safetensors",
                9_100));
        assertThat(control.state().system()).isEqualTo(SystemState.DEGRADED);
    }

    private void apply(ClusterCommand c) {
        control.submit(c);
    }

    private String node(String id) {
        var n = control.state().nodes().get(id);
        return n.state() + "/" + n.partition();
    }

    /**
     * Waits until {@code id} was sent {@code count} assignments and its reload is over. The fake worker records a
     * request before the reloader has its answer, and a scan skips a node whose reload is still running: a scan
     * right after the request arrived would not queue the node's next reload.
     */
    private void awaitAssigned(String id, int count) {
        await(id + " assigned " + count + " times").atMost(Duration.ofSeconds(10))
                .until(() -> workers.get(id).assigned.size() >= count && !reloader.reloading(id));
    }

    /** Each worker holds exactly this many assignments, and still does a moment later (reloads are asynchronous). */
    private void assertQuietly(Map<String, Integer> expected) {
        await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
            for (String id : WORKERS) {
                assertThat(workers.get(id).assigned).as(id).hasSize(expected.get(id));
            }
        });
    }
}
