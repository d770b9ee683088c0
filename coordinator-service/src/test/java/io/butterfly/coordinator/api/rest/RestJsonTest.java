package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import io.butterfly.coordinator.api.grpc.LoadTelemetry;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.Feasibility;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRequest;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.control.Liveness;
import io.butterfly.coordinator.control.PausedRequests;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import io.butterfly.coordinator.liveness.DetectorSettings;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.proto.coordinator.v1.LoadPhase;
import io.butterfly.proto.coordinator.v1.LoadReport;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The coordinator's REST answers, name for name and value for value, as clients, the CLI and the dashboard read them:
 * a cluster that lost a stage and recovered onto a spare, with a paused, a finished and a failed task, a node whose
 * load failed and load figures reported, rendered by the controllers, must equal the answers recorded in
 * {@code src/test/resources/rest-json/} (object members compared in any order, as JSON has them). After a deliberate
 * change of the API, {@code -Dbutterfly.rest-json.record=true} writes them anew.
 */
class RestJsonTest {

    private static final Path RECORDED = Path.of("src/test/resources/rest-json");
    private static final JsonMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();
    private static final long T0 = 1_796_000_000_000L;

    private final InMemoryControlLog control = new InMemoryControlLog();
    private final Clock clock = Clock.fixed(Instant.ofEpochMilli(T0 + 60_000), ZoneOffset.UTC);
    private final Liveness liveness = new Liveness(new DetectorSettings(8.0, 4.0, 200, 100, 800, 100, 250), clock);
    private final LoadTelemetry telemetry = new LoadTelemetry();
    private final SystemStateController controller;
    private final TasksController tasks = new TasksController(control);

    @SuppressWarnings("unchecked")
    RestJsonTest() {
        ObjectProvider<PausedRequests> paused = mock(ObjectProvider.class);
        when(paused.getIfAvailable()).thenReturn(() -> 2);
        ObjectProvider<io.butterfly.coordinator.model.ModelCatalog> models = mock(ObjectProvider.class);
        controller = new SystemStateController(control, liveness, ReadyCluster.props("coordinator-0"), telemetry, paused,
                models, clock, new io.butterfly.coordinator.control.PrefixCacheReports());
    }

    @AfterEach
    void close() {
        control.close();
    }

    /**
     * READY on w1, w2; spares w3 and w4 join; three tasks; w2 fails, its stage goes to w4, whose load fails, then to w3:
     * recovering.
     */
    private void degraded() {
        ReadyCluster.bootstrap(control);
        control.submit(new ClusterCommand.FeasibilityAssessed(new Feasibility("capacity-weighted", true, 1_153_152,
                17_179_869_184L, null, T0 + 9), T0 + 9));
        control.submit(new ClusterCommand.NodeJoined(worker("w3"), T0 + 10));
        control.submit(new ClusterCommand.NodeJoined(worker("w4"), T0 + 11));
        TaskRequest asked = TaskRequest.of(List.of(4L, 5L, 6L), 8, 0.8, 0.95, 40, 7, 2, false, List.of("."), "order-17");
        control.submit(new ClusterCommand.TasksRecorded("coordinator-0", T0, List.of(
                new TaskEvent.Started("t-paused", 3, asked, T0 + 20),
                new TaskEvent.Progressed("t-paused", 0, List.of(new TaskEvent.Token(11, -0.5,
                        List.of(new TaskEvent.Alternative(11, -0.5), new TaskEvent.Alternative(12, -1.25)))), T0 + 21),
                new TaskEvent.Paused("t-paused", "stage w2 is gone", T0 + 22),
                new TaskEvent.Started("t-done", 3, TaskRequest.of(List.of(1L, 2L, 3L), 2, 0, 1, 0, 0, 0, true,
                        List.of(), null), T0 + 23),
                new TaskEvent.Finished("t-done", List.of(9L, 10L), "length", T0 + 24),
                new TaskEvent.Started("t-failed", 3, TaskRequest.of(List.of(4L, 5L, 6L), 8, 0.8, 0.95, 40, 7, 2, false,
                        List.of("."), null), T0 + 25),
                new TaskEvent.Failed("t-failed", "the client closed the stream", "coordinator-0", T0, T0 + 26)),
                T0 + 27));
        liveness.heartbeat("w1", 1);
        telemetry.record(LoadReport.newBuilder().setNodeId("w1").setEpoch(1).setPhase(LoadPhase.READY).setProgress(1)
                .setBytesDone(1024).setBytesTotal(1024).setPartitionChecksum("c1").setLoadMillis(1500)
                .setWarmupMillis(12.34).setMemoryBytes(4096).setWarmupStarted(true).setWarmupSuccess(true)
                .setEstimatedCompletionSecs(-1).build());
        telemetry.record(LoadReport.newBuilder().setNodeId("w3").setEpoch(1).setPhase(LoadPhase.DOWNLOADING)
                .setProgress(0.4567).setBytesDone(400).setBytesTotal(1000).setCurrentFile("layer_002.safetensors")
                .setEstimatedCompletionSecs(2.345).build());
        control.submit(new ClusterCommand.NodeSuspected("w2", T0 + 30, 4.5, "no heartbeat for 900 ms", T0 + 31));
        control.submit(new ClusterCommand.NodeFailed("w2", T0 + 30, 9.25, "no heartbeat for 1500 ms", T0 + 32));
        control.submit(new ClusterCommand.PartitionsAssigned(2, List.of(new StageAssignment("w1", 0, 2, true, false),
                new StageAssignment("w4", 2, 4, false, true)), T0 + 33));
        control.submit(new ClusterCommand.LoadFailed("w4", 2, "OUT_OF_MEMORY", "needs 3 GiB", T0 + 34));
        control.submit(new ClusterCommand.PartitionsAssigned(3, List.of(new StageAssignment("w1", 0, 2, true, false),
                new StageAssignment("w3", 2, 4, false, true)), T0 + 35));
    }

    /** ... then w3 loads and the weights are validated: READY again, the recovery ended. */
    private void recovered() {
        degraded();
        control.submit(new ClusterCommand.LoadCompleted("w3", 3, "c3", 1L << 30, T0 + 40));
        control.submit(new ClusterCommand.WeightsValidated(new WeightValidation(3, WeightValidation.Status.VALID, "root",
                "partition-root-3", List.of("w1", "w3"), List.of(), List.of(), T0 + 41), T0 + 41));
    }

    private static NodeInfo worker(String id) {
        return new NodeInfo(id, "worker", "host-" + id, 9000, 8000, 4, 8L << 30, 12.5, "cpu");
    }

    @Test
    void whileRecovering() throws IOException {
        degraded();
        answers("degraded", controller.systemState(), controller.nodeState("w2"), controller.health());
    }

    @Test
    void afterTheRecovery() throws IOException {
        recovered();
        answers("recovered", controller.systemState(), controller.nodes(), controller.nodeState("coordinator-0"),
                controller.nodeState("w4"), tasks.tasks(), tasks.taskState("t-paused"), controller.epoch(),
                controller.health());
    }

    @Test
    void aGeneration() throws IOException {
        GenerationResult r = new GenerationResult("t-1", "tiny", List.of(1L, 17L), List.of(7L, 8L), "ab", "length",
                List.of(-0.25, -1.5), List.of(List.of(new TokenLogprob(7, -0.25), new TokenLogprob(3, -2.0)),
                List.of(new TokenLogprob(8, -1.5))), 12.3456, 40.12345, 80.5, Map.of("w1", 3.14159, "w2", 2.5),
                1.23456, 20.5, 0.125);
        answers("generation", InferenceController.toJson(r, true), InferenceController.toJson(r, false));
    }

    /** Each answer, as JSON, equals the one recorded under {@code name} (or is recorded, when asked). */
    private static void answers(String name, Object... answers) throws IOException {
        Map<String, Object> all = new LinkedHashMap<>();
        for (int i = 0; i < answers.length; i++) {
            all.put("answer " + i, answers[i]);
        }
        String json = JSON.writeValueAsString(all);
        Path file = RECORDED.resolve(name + ".json");
        if (Boolean.getBoolean("butterfly.rest-json.record")) {
            Files.createDirectories(RECORDED);
            Files.writeString(file, json + "\n");
        }
        JsonNode recorded = JSON.readTree(Files.readString(file));
        assertThat(JSON.readTree(json)).as(name + ": the answers as " + file + " records them").isEqualTo(recorded);
    }
}
