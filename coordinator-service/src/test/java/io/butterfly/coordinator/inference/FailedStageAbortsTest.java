package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.inference.engine.StepInput;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.gateway.worker.WorkerGateway;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.StreamClosed;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.testsupport.InProcessGrpc;
import io.butterfly.testsupport.OneWaySink;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A step waiting on a stage that the failure detector declares FAILED ends at once with UNAVAILABLE naming the
 * stage (a paused stage never answers, and the stream to it breaks only when keepalive gives up, ~45 s later).
 * The steps go through the real worker gateway to a fake first stage served in-process.
 */
class FailedStageAbortsTest {

    private final InMemoryControlLog control = new InMemoryControlLog();
    /** The first stage: it takes every step (and passes it to a second stage that never answers). */
    private final OneWaySink<ForwardRequest> received = new OneWaySink<>();
    private InProcessGrpc firstStage;
    private WorkerGateway workers;

    @BeforeEach
    void start() {
        ReadyCluster.bootstrap(control);
        firstStage = InProcessGrpc.serving(new WorkerServiceGrpc.WorkerServiceImplBase() {
            @Override
            public StreamObserver<ForwardRequest> steps(StreamObserver<StreamClosed> closed) {
                return received.open(closed);
            }
        });
        workers = new WorkerGateway(new WorkerGateway.Settings("coordinator-0", "127.0.0.1", 9999, "127.0.0.1", 9081,
                List.of(), 120), (host, port) -> firstStage.channel());
        new FailedStageAborts(control, workers);
    }

    @AfterEach
    void stop() {
        workers.close();
        firstStage.close();
        control.close();
    }

    @Test
    void aStepThroughAStageDeclaredFailedEndsAtOnceNamingIt() throws Exception {
        CompletableFuture<ButterflyException> failed = step("t", 3, ReadyCluster.worker("w1"), ReadyCluster.worker("w2"));
        // The step is waiting: it reached the first stage. (A fixed pause let the verdict come first when the task
        // started late, and the abort then found no step to end: it waited for its 120 s timeout.)
        assertThat(received.poll(10)).as("the step reached the first stage").isNotNull();
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
        CompletableFuture<ButterflyException> other = step("t2", 0, ReadyCluster.worker("w1"));
        assertThat(received.poll(10)).as("the step reached the first stage").isNotNull();
        control.submit(new ClusterCommand.NodeSuspected("w2", 9_000, 4.2, "no heartbeat for 500 ms", 9_500));
        control.submit(new ClusterCommand.NodeFailed("w2", 9_000, 8.1, "no heartbeat for 1400 ms", 10_400));
        Thread.sleep(300);
        assertThat(other).isNotDone();
        workers.abortThrough("w1", "test over"); // ends it, so the test does not wait for the step timeout
        assertThat(other.get(5, TimeUnit.SECONDS).getMessage()).contains("w1 was declared FAILED");
    }

    /** Sends step {@code step} (as micro-batch {@code step}) of sequence {@code taskId} through {@code stages}; its failure. */
    private CompletableFuture<ButterflyException> step(String taskId, int step, NodeInfo... stages) {
        Pipeline.Route route = workers.route(List.of(stages));
        return workers.submit(route, new StepInput(step, 1, List.of(new StepInput.Slice(taskId, 0, 1, 8)), new long[]{1}))
                .handle((done, failure) -> failure == null ? null
                        : (ButterflyException) (failure instanceof java.util.concurrent.CompletionException
                                ? failure.getCause() : failure));
    }
}
