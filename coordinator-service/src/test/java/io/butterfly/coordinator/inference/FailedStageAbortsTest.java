package io.butterfly.coordinator.inference;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.bootstrap.WorkerChannels;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.StreamClosed;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A step waiting on a stage that the failure detector declares FAILED ends at once with UNAVAILABLE naming the
 * stage (a paused stage never answers, and the stream to it breaks only when keepalive gives up, ~45 s later).
 */
class FailedStageAbortsTest {

    private final InMemoryControlLog control = new InMemoryControlLog();
    private Server firstStage;
    private PipelineSteps steps;
    /** Steps the first stage received (a step waits for its outcome from before it is sent). */
    private final java.util.concurrent.BlockingQueue<ForwardRequest> received = new java.util.concurrent.LinkedBlockingQueue<>();

    @BeforeEach
    void start() throws Exception {
        ReadyCluster.bootstrap(control);

        // A first stage that takes every step and passes it to a second stage that never answers.
        firstStage = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
                .addService(new WorkerServiceGrpc.WorkerServiceImplBase() {
                    @Override
                    public StreamObserver<ForwardRequest> steps(StreamObserver<StreamClosed> closed) {
                        return new StreamObserver<>() {
                            @Override
                            public void onNext(ForwardRequest value) {
                                received.add(value);
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
                }).build().start();
        CoordinatorProperties props = ReadyCluster.props("coordinator-0");
        steps = new PipelineSteps(new WorkerChannels(9999), props);
        new FailedStageAborts(control, steps);
    }

    @AfterEach
    void stop() {
        steps.close();
        firstStage.shutdownNow();
        control.close();
    }

    @Test
    void aStepThroughAStageDeclaredFailedEndsAtOnceNamingIt() throws Exception {
        CompletableFuture<ButterflyException> failed = CompletableFuture.supplyAsync(() -> {
            try {
                steps.run(endpoint("w1", firstStage.getPort()), ForwardRequest.newBuilder().setTaskId("t").setStep(3)
                        .setEpoch(1).addDownstream(endpoint("w2", 9)).build());
                return null;
            } catch (ButterflyException e) {
                return e;
            }
        });
        // The step is waiting: it reached the first stage. (A fixed pause let the verdict come first when the task
        // started late, and the abort then found no step to end: it waited for its 120 s timeout.)
        assertThat(received.poll(10, TimeUnit.SECONDS)).as("the step reached the first stage").isNotNull();
        assertThat(failed).isNotDone();

        control.submit(new ClusterCommand.NodeSuspected("w2", 9_000, 4.2, "no heartbeat for 500 ms", 9_500));
        assertThat(failed).as("suspicion alone aborts nothing").isNotDone();
        control.submit(new ClusterCommand.NodeFailed("w2", 9_000, 8.1, "no heartbeat for 1400 ms", 10_400));

        ButterflyException e = failed.get(5, TimeUnit.SECONDS);
        assertThat(e).isNotNull();
        assertThat(e.kind()).isEqualTo(ErrorKind.UNAVAILABLE);
        assertThat(e.getMessage()).contains("w2 was declared FAILED", "no heartbeat for 1400 ms");
        assertThat(e.context()).containsEntry("unreachable", "w2");
    }

    @Test
    void aStepNotThroughTheFailedStageWaitsOn() throws Exception {
        CompletableFuture<ButterflyException> other = CompletableFuture.supplyAsync(() -> {
            try {
                steps.run(endpoint("w1", firstStage.getPort()), ForwardRequest.newBuilder().setTaskId("t2").setStep(0)
                        .setEpoch(1).build());
                return null;
            } catch (ButterflyException e) {
                return e;
            }
        });
        assertThat(received.poll(10, TimeUnit.SECONDS)).as("the step reached the first stage").isNotNull();
        control.submit(new ClusterCommand.NodeSuspected("w2", 9_000, 4.2, "no heartbeat for 500 ms", 9_500));
        control.submit(new ClusterCommand.NodeFailed("w2", 9_000, 8.1, "no heartbeat for 1400 ms", 10_400));
        Thread.sleep(300);
        assertThat(other).isNotDone();
        steps.abortThrough("w1", "test over"); // ends it, so the test does not wait for the step timeout
        assertThat(other.get(5, TimeUnit.SECONDS).getMessage()).contains("w1 was declared FAILED");
    }

    private static Endpoint endpoint(String id, int port) {
        return Endpoint.newBuilder().setNodeId(id).setHost("127.0.0.1").setGrpcPort(port).build();
    }

}
