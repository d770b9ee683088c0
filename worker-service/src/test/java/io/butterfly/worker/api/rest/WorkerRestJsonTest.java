package io.butterfly.worker.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import io.butterfly.worker.capability.CapabilityProbe;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.engine.PartitionExecutor;
import io.butterfly.worker.engine.PrefixCacheStats;
import io.butterfly.worker.gateway.CoordinatorGateway;
import io.butterfly.worker.gateway.DiscoveryGateway;
import io.butterfly.worker.partition.LoadPhase;
import io.butterfly.worker.partition.PartitionManager;
import io.butterfly.worker.partition.PartitionSettings;
import io.butterfly.worker.partition.PartitionStatus;
import io.butterfly.worker.pipeline.PipelineStage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The worker's REST answers, name for name and value for value, as the CLI, the integration tests and operators read
 * them: a worker holding a loaded stage, and one that has no partition and whose join was refused, must equal the
 * answers recorded in {@code src/test/resources/rest-json/} (object members in any order). After a deliberate change
 * of the API, {@code -Dbutterfly.rest-json.record=true} writes them anew.
 */
class WorkerRestJsonTest {

    private static final Path RECORDED = Path.of("src/test/resources/rest-json");
    private static final JsonMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

    private final PartitionManager partitions = mock(PartitionManager.class);
    private final DiscoveryGateway membership = mock(DiscoveryGateway.class);
    private final CoordinatorGateway coordinator = mock(CoordinatorGateway.class);
    private final PipelineStage stage = mock(PipelineStage.class);
    private final CapabilityProbe capabilities = mock(CapabilityProbe.class);
    private final WorkerStateController controller =
            new WorkerStateController(partitions, membership, coordinator, stage, capabilities);

    WorkerRestJsonTest() {
        when(partitions.settings()).thenReturn(new PartitionSettings("worker-1", Path.of("/tmp/w1"), List.of(),
                new ExecutorOptions("cpu", 2, 2_000_000_000L)));
        when(capabilities.engineThreads()).thenReturn(2);
    }

    /** Stage [4, 8) with the head, loaded in epoch 2 and held on in epoch 3; two replicas, one never acknowledged. */
    private void loadedStage() {
        when(partitions.status()).thenReturn(new PartitionStatus("tiny-llama", 3, 4, 8, false, true, LoadPhase.READY,
                1.0, 123_456, 123_456, "layers.7.safetensors", "ab12cd", 812, 35.5, null, 2));
        PartitionExecutor executor = mock(PartitionExecutor.class);
        when(executor.projections()).thenReturn("oneDNN");
        when(executor.weightBytes()).thenReturn(98_304L);
        when(executor.cachedSequences()).thenReturn(3);
        when(executor.cachedBytes()).thenReturn(65_536L);
        when(executor.answeredTokens()).thenReturn(17L);
        when(executor.prefixCacheStats()).thenReturn(new PrefixCacheStats(true, 4, 16_384L, 96L, 64L, 1L));
        when(partitions.loadedExecutor()).thenReturn(executor);
        when(membership.joined()).thenReturn(true);
        Map<String, Instant> acks = new LinkedHashMap<>();
        acks.put("coordinator-0@127.0.0.1:9080", Instant.ofEpochMilli(1_796_000_000_123L));
        acks.put("coordinator-1@127.0.0.1:9180", null);
        when(coordinator.heartbeatAcks()).thenReturn(acks);
        when(stage.stepsExecuted()).thenReturn(40L);
        when(stage.computeNanosTotal()).thenReturn(1_700_000_000L);
        when(stage.hashNanosTotal()).thenReturn(8_500_000L);
    }

    /** No assignment, no engine, the join refused. */
    private void unassigned() {
        when(partitions.status()).thenReturn(PartitionStatus.unassigned());
        when(membership.joined()).thenReturn(false);
        when(membership.joinError()).thenReturn("CLUSTER_FULL: the cluster has its 3 workers");
        when(coordinator.heartbeatAcks()).thenReturn(Map.of());
    }

    @Test
    void aLoadedStage() throws IOException {
        loadedStage();
        assertRecorded("worker-state-loaded", controller.state());
        assertRecorded("worker-partitions-loaded", controller.partitions());
        assertRecorded("worker-connections", controller.connections());
        assertRecorded("worker-metrics-loaded", controller.metrics());
    }

    @Test
    void noPartitionAndARefusedJoin() throws IOException {
        unassigned();
        assertRecorded("worker-state-unassigned", controller.state());
        assertRecorded("worker-partitions-unassigned", controller.partitions());
        assertRecorded("worker-metrics-unassigned", controller.metrics());
    }

    private static void assertRecorded(String name, Object answer) throws IOException {
        Path file = RECORDED.resolve(name + ".json");
        String actual = JSON.writeValueAsString(answer);
        if (Boolean.getBoolean("butterfly.rest-json.record")) {
            Files.createDirectories(RECORDED);
            Files.writeString(file, actual + "\n");
        }
        JsonNode expected = JSON.readTree(Files.readString(file));
        assertThat(JSON.readTree(actual)).as(name).isEqualTo(expected);
    }
}
