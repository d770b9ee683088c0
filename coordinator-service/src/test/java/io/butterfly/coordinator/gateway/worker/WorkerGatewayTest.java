package io.butterfly.coordinator.gateway.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.identity.Caller;
import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.common.tensor.TensorCodec;
import io.butterfly.coordinator.reconcile.WorkerCallFailedException;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.inference.engine.StepInput;
import io.butterfly.coordinator.inference.engine.StepResult;
import io.butterfly.coordinator.integrity.PartitionReport;
import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.worker.v1.ChecksumReport;
import io.butterfly.proto.worker.v1.ChecksumRequest;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.FileChecksum;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.ReleaseRequest;
import io.butterfly.proto.worker.v1.ReleaseResponse;
import io.butterfly.proto.worker.v1.SequenceSlice;
import io.butterfly.proto.worker.v1.StageTiming;
import io.butterfly.proto.worker.v1.StepFailure;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.proto.worker.v1.StreamClosed;
import io.butterfly.proto.worker.v1.ValidationAck;
import io.butterfly.proto.worker.v1.ValidationResult;
import io.butterfly.proto.worker.v1.ValidationStatus;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.testsupport.InProcessGrpc;
import io.butterfly.testsupport.OneWaySink;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The worker gateway is where worker messages are built and read: what a step, a release, a checksum request and
 * a verdict look like on the wire, and what their replies read back as, against a fake worker served in-process.
 */
class WorkerGatewayTest {

    private static final NodeInfo W1 = worker("w1", 9001);
    private static final NodeInfo W2 = worker("w2", 9002);
    private static final NodeInfo W3 = worker("w3", 9003);

    /** Takes steps on its stream, answers checksums, records releases and verdicts; refuses calls while down. */
    static final class FakeWorker extends WorkerServiceGrpc.WorkerServiceImplBase {
        final OneWaySink<ForwardRequest> steps = new OneWaySink<>();
        final BlockingQueue<Object> calls = new LinkedBlockingQueue<>();
        volatile boolean down;

        @Override
        public StreamObserver<ForwardRequest> steps(StreamObserver<StreamClosed> closed) {
            return steps.open(closed);
        }

        @Override
        public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> response) {
            calls.add(request);
            response.onNext(ReleaseResponse.getDefaultInstance());
            response.onCompleted();
        }

        @Override
        public void reportChecksums(ChecksumRequest request, StreamObserver<ChecksumReport> response) {
            calls.add(request);
            response.onNext(ChecksumReport.newBuilder().setNodeId("w2").setEpoch(request.getEpoch())
                    .setLayerRange(LayerRange.newBuilder().setStart(2).setEnd(4)).setWeightHash("ab12")
                    .addFiles(FileChecksum.newBuilder().setName("layer-2.safetensors").setSha256("cd34"))
                    .addFiles(FileChecksum.newBuilder().setName("layer-3.safetensors").setSha256("ef56")).build());
            response.onCompleted();
        }

        @Override
        public void applyValidation(ValidationResult request, StreamObserver<ValidationAck> response) {
            if (down) {
                response.onError(Status.UNAVAILABLE.withDescription("worker restarting").asRuntimeException());
                return;
            }
            calls.add(request);
            response.onNext(ValidationAck.getDefaultInstance());
            response.onCompleted();
        }
    }

    private final FakeWorker worker = new FakeWorker();
    private final InProcessGrpc server = InProcessGrpc.serving(worker);
    private final WorkerGateway gateway = new WorkerGateway(new WorkerGateway.Settings("coordinator-0", "10.0.0.9",
            9083, "10.0.0.8", 9081, List.of(), 120), (host, port) -> server.channel());

    @AfterEach
    void stop() {
        gateway.close();
        server.close();
    }

    @Test
    void aStepGoesToTheFirstStageWithItsTokensAndTheRestOfTheRouteAndItsOutcomeReadsBack() throws Exception {
        Pipeline.Route route = gateway.route(List.of(W1, W2, W3));
        CompletableFuture<StepResult> result = gateway.submit(route, new StepInput(7, 4,
                List.of(new StepInput.Slice("t", 0, 3, 40), new StepInput.Slice("u", 5, 1, 12)), new long[]{1, 17, 5, 9}));

        ForwardRequest sent = worker.steps.poll(10);
        assertThat(sent).isNotNull();
        assertThat(sent.getTaskId()).isEqualTo("batch-7");
        assertThat(sent.getStep()).isEqualTo(7);
        assertThat(sent.getEpoch()).isEqualTo(4);
        // each slice states the XXH64 of its own token ids (docs/verified-execution.md)
        assertThat(sent.getSequencesList()).containsExactly(SequenceSlice.newBuilder().setSequenceId("t")
                .setPosition(0).setNumTokens(3).setReservePositions(40)
                .setInputHash(io.butterfly.common.hash.Xxh64.ofLongs(new long[]{1, 17, 5}, 0, 3)).build(),
                SequenceSlice.newBuilder().setSequenceId("u").setPosition(5).setNumTokens(1).setReservePositions(12)
                .setInputHash(io.butterfly.common.hash.Xxh64.ofLongs(new long[]{9}, 0, 1)).build());
        assertThat(sent.getEnvelope().hasContract()).isFalse(); // token ids have no precision
        assertThat(sent.getEnvelope().getInput().getShapeList()).containsExactly(4L);
        assertThat(sent.getEnvelope().getInput().getDtype().name()).isEqualTo("INT64");
        assertThat(TensorCodec.toLongs(sent.getInput(), 1, "input")).containsExactly(1, 17, 5, 9);
        assertThat(sent.getDownstreamList()).containsExactly(endpoint(W2), endpoint(W3));
        assertThat(sent.getReplyTo()).isEqualTo(Endpoint.newBuilder().setNodeId("coordinator-0").setHost("10.0.0.9")
                .setGrpcPort(9083).build());
        assertThat(result).isNotDone();

        StepOutcome logits = StepOutcome.newBuilder().setTaskId("batch-7").setStep(7)
                .setLogits(TensorCodec.float32(new float[]{0.5f, -1f, 2f, 0f, 1f, 3f}, 2, 3))
                .addTimings(StageTiming.newBuilder().setNodeId("w1").setComputeNanos(5).setWallNanos(7))
                .addTimings(StageTiming.newBuilder().setNodeId("w3").setComputeNanos(11).setWallNanos(13)).build();
        // over mutual TLS, only a stage of the step's own pipeline may answer it
        ButterflyException forged = assertThrows(ButterflyException.class,
                () -> gateway.received(logits, worker("w9")));
        assertThat(forged.kind()).isEqualTo(ErrorKind.PERMISSION_DENIED);
        assertThat(result).isNotDone();
        gateway.received(logits, worker("w3"));

        StepResult r = result.get(5, TimeUnit.SECONDS);
        assertThat(r.logits()).containsExactly(0.5f, -1f, 2f, 0f, 1f, 3f);
        assertThat(r.logitsShape()).containsExactly(2L, 3L);
        assertThat(r.timings()).containsExactly(new StepResult.StageTiming("w1", 5, 7),
                new StepResult.StageTiming("w3", 11, 13));
    }

    @Test
    void aStageThatFailsTheStepIsItsError() throws Exception {
        Pipeline.Route route = gateway.route(List.of(W1, W2));
        CompletableFuture<StepResult> result = gateway.submit(route, new StepInput(2, 4,
                List.of(new StepInput.Slice("t", 3, 1, 40)), new long[]{9}));
        assertThat(worker.steps.poll(10)).isNotNull();

        gateway.received(StepOutcome.newBuilder().setTaskId("batch-2").setStep(2).setFailure(StepFailure.newBuilder()
                .setNodeId("w2").setCode(GrpcErrors.toProto(ErrorCode.INSUFFICIENT_MEMORY))
                .setGrpcStatus(Status.Code.RESOURCE_EXHAUSTED.value()).setMessage("the KV cache budget is spent")
                .putContext("node", "w2")).build(), worker("w2"));

        assertThat(result).failsWithin(5, TimeUnit.SECONDS).withThrowableOfType(Exception.class)
                .havingRootCause().isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INSUFFICIENT_MEMORY);
                    assertThat(e.kind()).isEqualTo(ErrorKind.RESOURCE_EXHAUSTED);
                    assertThat(e.getMessage()).isEqualTo("pipeline step 2 failed on w2: the KV cache budget is spent");
                    assertThat(e.context()).containsEntry("node", "w2");
                });
    }

    @Test
    void aReleaseGoesToTheFirstStageNamingTheRestOfTheRoute() throws Exception {
        gateway.release(gateway.route(List.of(W1, W2, W3)), List.of("t", "u"));

        assertThat(worker.calls.poll(5, TimeUnit.SECONDS)).isEqualTo(ReleaseRequest.newBuilder()
                .addSequenceIds("t").addSequenceIds("u").addDownstream(endpoint(W2)).addDownstream(endpoint(W3)).build());
    }

    @Test
    void checksumsReadBackAsThePartitionsReport() {
        PartitionReport report = gateway.checksums(W2, 4, Duration.ofSeconds(5));

        assertThat(worker.calls.poll()).isEqualTo(ChecksumRequest.newBuilder().setEpoch(4).build());
        assertThat(report).isEqualTo(new PartitionReport("w2", 2, 4, "ab12", List.of(
                new PartitionReport.FileDigest("layer-2.safetensors", "cd34"),
                new PartitionReport.FileDigest("layer-3.safetensors", "ef56"))));
    }

    @Test
    void theVerdictIsAnnouncedAsAValidationResultAndAWorkerThatIsDownIsACallFailure() {
        WeightValidation valid = new WeightValidation(4, WeightValidation.Status.VALID, "root", "partition-root",
                List.of("w1", "w2"), List.of(), List.of(), 8);
        gateway.announceValidation(W1, valid, Duration.ofSeconds(5));
        assertThat(worker.calls.poll()).isEqualTo(ValidationResult.newBuilder().setEpoch(4).setMerkleRoot("root")
                .setPartitionRoot("partition-root").setStatus(ValidationStatus.VALID).setClusterReady(true)
                .addValidatedNodes("w1").addValidatedNodes("w2").build());

        worker.down = true;
        assertThatThrownBy(() -> gateway.announceValidation(W1, valid, Duration.ofSeconds(5)))
                .isInstanceOf(WorkerCallFailedException.class)
                .hasMessageContaining("UNAVAILABLE").hasMessageContaining("worker restarting");
    }

    private static NodeInfo worker(String id, int port) {
        return new NodeInfo(id, "worker", "host-" + id, port, 8000, 4, 8L << 30, 12.5, "cpu");
    }

    private static Endpoint endpoint(NodeInfo n) {
        return Endpoint.newBuilder().setNodeId(n.nodeId()).setHost(n.host()).setGrpcPort(n.grpcPort()).build();
    }

    private static Caller worker(String nodeId) {
        return Caller.certified(new PeerIdentity(NodeRole.WORKER, nodeId));
    }
}
