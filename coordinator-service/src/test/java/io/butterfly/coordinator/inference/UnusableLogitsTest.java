package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.ServingMetrics;
import io.butterfly.coordinator.inference.engine.Pipeline;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.SystemState;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Logits the last stage computed but that cannot be sampled (NaN or +infinity, e.g. an overflowing fp16 model) are
 * the stage's failure, answered like logits of the wrong shape (502 naming the problem), not a coordinator defect
 * (500 "internal error: IllegalArgumentException"); the task is logged FAILED.
 */
class UnusableLogitsTest {

    private static final int VOCAB = 8;

    private final InMemoryControlLog control = new InMemoryControlLog();
    private final GroupCommitTaskJournal journal = GroupCommitTaskJournal.start(control,
            new GroupCommitTaskJournal.Settings("coordinator-0", Duration.ofMillis(20), Duration.ofMillis(20),
                    256, 10_000), Clock.systemUTC());

    @BeforeEach
    void ready() {
        control.submit(new ClusterCommand.Bootstrap("tiny", 1, 1));
        control.submit(new ClusterCommand.ModelResolved("tiny", "root", 2));
        control.submit(new ClusterCommand.NodeJoined(new NodeInfo("w1", "worker", "127.0.0.1", 1, 8000, 4, 8L << 30,
                12.5, "cpu"), 3));
        control.submit(new ClusterCommand.PartitionsAssigned(1, List.of(new StageAssignment("w1", 0, 2, true, true)), 4));
        control.submit(new ClusterCommand.LoadCompleted("w1", 1, "c1", 5));
        control.submit(new ClusterCommand.WeightsValidated(new WeightValidation(1, WeightValidation.Status.VALID, "root",
                "partition-root", List.of("w1"), List.of(), List.of(), 6), 6));
        assertThat(control.state().system()).isEqualTo(SystemState.READY);
    }

    @AfterEach
    void close() {
        services.forEach(InferenceService::close);
        journal.close();
        control.close();
    }

    @Test
    void nanOrInfiniteLogitsAreTheStagesFailure() throws InterruptedException {
        for (float bad : new float[]{Float.NaN, Float.POSITIVE_INFINITY}) {
            float[] logits = new float[VOCAB];
            Arrays.fill(logits, 0.5f);
            logits[3] = bad;
            ButterflyException e = catchThrowableOfType(ButterflyException.class, () -> service(logits)
                    .generate(new GenerationRequest(null, List.of(1L, 2L), 2, 0.7, 1.0, 42L, null, null)));
            assertThat(e).as("logit %s", bad).isNotNull();
            assertThat(e.kind()).isEqualTo(ErrorKind.INTERNAL); // 502: the stage's output, not this coordinator
            assertThat(e.getMessage()).contains("logit 3 is " + bad);
        }
        assertThat(journal.flush(Duration.ofSeconds(10))).isTrue();
        assertThat(control.state().tasks().values()).hasSize(2)
                .allSatisfy(t -> assertThat(t.state()).isEqualTo(TaskRecord.State.FAILED));
        assertThat(control.state().system()).isEqualTo(SystemState.READY);
    }

    private InferenceService service(float[] logits) {
        CoordinatorProperties props = new CoordinatorProperties("coordinator-0", "127.0.0.1", "butterfly", "tiny", 1,
                "127.0.0.1", 9082, "127.0.0.1", 9081, Path.of("/tmp/unused"), 1024, 4096, 65536, 120,
                Duration.ofMinutes(30), List.of(), 1024);
        ModelConfig config = new ModelConfig(Architecture.LLAMA, 2, 16, 2, 2, 32, VOCAB, 64, 1e-5, 10000.0, false, 1, 2);
        ModelCatalog catalog = mock(ModelCatalog.class);
        when(catalog.servedFor("root")).thenReturn(new ServedModel(new Manifest("tiny", "llama", "1", 2, 0, 16, 512, "F32", List.of(), "root", 0, null, null), config, null));
        Pipeline steps = ScriptedPipeline.answering(in -> ScriptedPipeline.answer(logits, 1, VOCAB));
        InferenceService service = new InferenceService(props.inference(1, java.time.Duration.ofSeconds(60)),
                ScriptedCluster.SCHEDULING, control, catalog, steps, journal, ServingMetrics.NONE, RequestTracing.NONE,
                Clock.systemUTC());
        services.add(service);
        return service;
    }

    private final List<InferenceService> services = new java.util.ArrayList<>();
}
