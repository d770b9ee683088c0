package io.butterfly.worker.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.grpc.OneWayStreams;
import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.proto.worker.v1.StreamClosed;
import io.butterfly.testsupport.InProcessGrpc;
import io.butterfly.testsupport.OneWaySink;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.engine.EngineThread;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.gateway.CoordinatorGateway;
import io.butterfly.worker.gateway.RegistryGateway;
import io.butterfly.worker.gateway.StageGateway;
import io.butterfly.worker.partition.PartitionManager;
import io.butterfly.worker.partition.PartitionSettings;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A step naming unusable peer addresses is refused naming the field, and never escapes {@code accept}: an
 * exception there would close the Steps stream that every task's steps share.
 */
class MalformedStepTest {

    @TempDir
    Path dataDir;

    private final OneWaySink<StepOutcome> outcomes = new OneWaySink<>();
    private InProcessGrpc coordinator;
    private CoordinatorGateway coordinators;
    private PipelineStage stage;
    private final EngineThread engineThread = EngineThread.named("engine");

    @BeforeEach
    void start() {
        coordinator = InProcessGrpc.serving(new CoordinatorServiceGrpc.CoordinatorServiceImplBase() {
            @Override
            public StreamObserver<StepOutcome> stepOutcomes(StreamObserver<StreamClosed> closed) {
                return outcomes.open(closed);
            }
        });
        // Every address the stage dials leads to the fake coordinator.
        OneWayStreams.Channels channels = (host, port) -> coordinator.channel();
        coordinators = new CoordinatorGateway("w1", 100, null, channels);
        PartitionManager partitions = new PartitionManager(
                new PartitionSettings("w1", dataDir, List.of(), new ExecutorOptions("cpu", 1)),
                new RegistryGateway(channels, 5, Duration.ofSeconds(5), 2, false, null), coordinators);
        stage = new PipelineStage(partitions, new StageGateway(channels, coordinators, "w1"), coordinators, StepTracing.NONE, "w1",
                new io.butterfly.common.verify.PrecisionContract("F32", "FLOAT32", "INT8"), OutputCorruption.NONE,
                engineThread);
    }

    @AfterEach
    void stop() {
        coordinators.close();
        coordinator.close();
        engineThread.close();
    }

    @Test
    void aStepNamingAnUnusableNextStageIsAnsweredInvalidArgumentNamingTheField() throws Exception {
        Step step = step(endpoint("127.0.0.1", 9080), List.of(endpoint("no such host", 9091)));

        assertThatCode(() -> stage.accept(step)).doesNotThrowAnyException();

        StepOutcome outcome = outcomes.poll(10);
        assertThat(outcome).isNotNull();
        assertThat(outcome.getFailure().getGrpcStatus()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
        assertThat(GrpcErrors.fromProto(outcome.getFailure().getCode())).isEqualTo(ErrorCode.INVALID_MESSAGE);
        assertThat(outcome.getFailure().getMessage()).contains("downstream[0].host", "no such host");
    }

    @Test
    void aStepWhoseReplyToCannotBeDialledIsDroppedWithoutBreakingTheStream() {
        for (Endpoint replyTo : List.of(endpoint("", 9080), endpoint("127.0.0.1", 0), endpoint("127.0.0.1", 70000))) {
            assertThatCode(() -> stage.accept(step(replyTo, List.of()))).doesNotThrowAnyException();
        }
    }

    /** A step of task "t" whose input is never reached: the addresses are checked first. */
    private static Step step(Endpoint replyTo, List<Endpoint> downstream) {
        return new Step("t", 0, 1, List.of(), null, downstream, replyTo, List.of());
    }

    private static Endpoint endpoint(String host, int port) {
        return new Endpoint("n", host, port);
    }
}
