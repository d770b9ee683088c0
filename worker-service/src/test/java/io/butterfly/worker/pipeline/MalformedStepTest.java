package io.butterfly.worker.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.proto.worker.v1.StreamClosed;
import io.butterfly.worker.cluster.CoordinatorLink;
import io.butterfly.worker.cluster.PeerChannels;
import io.butterfly.worker.config.RegistryClientProperties;
import io.butterfly.worker.config.WorkerProperties;
import io.butterfly.worker.partition.PartitionManager;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.util.unit.DataSize;

/**
 * A step naming unusable peer addresses is refused naming the field, and never escapes {@code accept}: an
 * exception there would close the Steps stream that every task's steps share.
 */
class MalformedStepTest {

    @TempDir
    Path dataDir;

    private final LinkedBlockingQueue<StepOutcome> outcomes = new LinkedBlockingQueue<>();
    private Server coordinator;
    private PipelineStage stage;

    @BeforeEach
    void start() throws Exception {
        coordinator = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
                .addService(new CoordinatorServiceGrpc.CoordinatorServiceImplBase() {
                    @Override
                    public StreamObserver<StepOutcome> stepOutcomes(StreamObserver<StreamClosed> closed) {
                        return new StreamObserver<>() {
                            @Override
                            public void onNext(StepOutcome outcome) {
                                outcomes.add(outcome);
                            }

                            @Override
                            public void onError(Throwable t) {
                            }

                            @Override
                            public void onCompleted() {
                                closed.onNext(StreamClosed.getDefaultInstance());
                                closed.onCompleted();
                            }
                        };
                    }
                })
                .build().start();
        WorkerProperties props = new WorkerProperties("w1", "127.0.0.1", dataDir, "cpu", 1, "butterfly", "127.0.0.1",
                1, 100, "127.0.0.1", 0, List.of(), 5000, DataSize.ofBytes(0), java.time.Duration.ofMinutes(10), DataSize.ofBytes(0));
        PeerChannels channels = new PeerChannels();
        PartitionManager partitions = new PartitionManager(props,
                new RegistryClientProperties(5, Duration.ofSeconds(5), 2, false, null), channels, new CoordinatorLink(props, channels));
        stage = new PipelineStage(partitions, channels, new StepStreams(channels, props), props);
    }

    @AfterEach
    void stop() {
        coordinator.shutdownNow();
    }

    @Test
    void aStepNamingAnUnusableNextStageIsAnsweredInvalidArgumentNamingTheField() throws Exception {
        ForwardRequest step = step(endpoint("127.0.0.1", coordinator.getPort()))
                .addDownstream(endpoint("no such host", 9091)).build();

        assertThatCode(() -> stage.accept(step)).doesNotThrowAnyException();

        StepOutcome outcome = outcomes.poll(10, TimeUnit.SECONDS);
        assertThat(outcome).isNotNull();
        assertThat(outcome.getFailure().getGrpcStatus()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
        assertThat(GrpcErrors.fromProto(outcome.getFailure().getCode())).isEqualTo(ErrorCode.INVALID_MESSAGE);
        assertThat(outcome.getFailure().getMessage()).contains("downstream[0].host", "no such host");
    }

    @Test
    void aStepWhoseReplyToCannotBeDialledIsDroppedWithoutBreakingTheStream() {
        for (Endpoint replyTo : List.of(endpoint("", 9080), endpoint("127.0.0.1", 0), endpoint("127.0.0.1", 70000))) {
            assertThatCode(() -> stage.accept(step(replyTo).build())).doesNotThrowAnyException();
        }
    }

    private static ForwardRequest.Builder step(Endpoint replyTo) {
        return ForwardRequest.newBuilder().setTaskId("t").setStep(0).setEpoch(1).setReplyTo(replyTo);
    }

    private static Endpoint endpoint(String host, int port) {
        return Endpoint.newBuilder().setNodeId("n").setHost(host).setGrpcPort(port).build();
    }
}
