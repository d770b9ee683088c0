package io.butterfly.worker.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.tensor.TensorCodec;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.SequenceSlice;
import io.butterfly.proto.worker.v1.StageTiming;
import io.butterfly.proto.worker.v1.StreamClosed;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.testsupport.InProcessGrpc;
import io.butterfly.testsupport.OneWaySink;
import io.butterfly.worker.engine.StageResult;
import io.butterfly.worker.gateway.CoordinatorGateway;
import io.butterfly.worker.gateway.StageGateway;
import io.butterfly.worker.pipeline.EncodedInput;
import io.butterfly.worker.pipeline.StageClock;
import io.butterfly.worker.pipeline.Step;
import io.grpc.stub.StreamObserver;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/**
 * A step read off the Steps stream and handed on to the next stage keeps everything it arrived with but what this
 * stage changes: the input (its hidden states), the downstream (itself removed) and the timings (its own added).
 */
class StepMessagesTest {

    @Test
    void aStepHandedOnKeepsEveryFieldItArrivedWith() throws Exception {
        OneWaySink<ForwardRequest> nextStage = new OneWaySink<>();
        try (InProcessGrpc next = InProcessGrpc.serving(new WorkerServiceGrpc.WorkerServiceImplBase() {
            @Override
            public StreamObserver<ForwardRequest> steps(StreamObserver<StreamClosed> closed) {
                return nextStage.open(closed);
            }
        })) {
            ForwardRequest arrived = ForwardRequest.newBuilder().setTaskId("task-1").setStep(7).setEpoch(3)
                    .addSequences(SequenceSlice.newBuilder().setSequenceId("a").setPosition(5).setNumTokens(2)
                            .setReservePositions(64))
                    .addSequences(SequenceSlice.newBuilder().setSequenceId("b").setPosition(0).setNumTokens(1)
                            .setSkipLogits(true))
                    .setInput(TensorCodec.float32(new float[]{1, 2, 3, 4, 5, 6}, 3, 2))
                    .addDownstream(endpoint("w2", 9092)).addDownstream(endpoint("w3", 9093)).addDownstream(endpoint("w4", 9094))
                    .setReplyTo(endpoint("coordinator-1", 9090))
                    .addTimings(StageTiming.newBuilder().setNodeId("w0").setComputeNanos(10).setWallNanos(20))
                    .build();
            Step step = WorkerMessages.step(arrived);
            EncodedInput.Hidden received = step.input().hiddenStates("input hidden states");
            assertThat(received.rows()).isEqualTo(3);
            assertThat(received.cols()).isEqualTo(2);
            assertThat(received.littleEndianFloats().getFloat(5 * Float.BYTES)).isEqualTo(6f);

            ByteBuffer hidden = ByteBuffer.allocate(6 * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            hidden.asFloatBuffer().put(new float[]{-1, -2, -3, -4, -5, -6});
            CoordinatorGateway coordinators = new CoordinatorGateway("w1", 100, null, (host, port) -> next.channel());
            StageGateway nextStages = new StageGateway((host, port) -> next.channel(), coordinators, "w1");
            try {
                io.butterfly.common.verify.PrecisionContract contract =
                        new io.butterfly.common.verify.PrecisionContract("F32", "FLOAT32", "INT8");
                nextStages.forward(step, new StageResult(hidden, new long[]{3, 2}, false), new StageClock("w1", System.nanoTime(), 1234),
                        new io.butterfly.worker.pipeline.StageHashes("w1", contract, new long[]{11, -12}));
                ForwardRequest handedOn = nextStage.poll(10);

                assertThat(handedOn).isNotNull();
                StageTiming mine = handedOn.getTimings(1);
                assertThat(mine.getNodeId()).isEqualTo("w1");
                assertThat(mine.getComputeNanos()).isEqualTo(1234);
                assertThat(mine.getWallNanos()).isPositive();
                io.butterfly.proto.worker.v1.PrecisionContract wireContract = io.butterfly.proto.worker.v1.PrecisionContract
                        .newBuilder().setWeightFormat("F32").setComputeDtype("FLOAT32").setActivations("INT8").build();
                ForwardRequest.Builder expected = arrived.toBuilder()
                        .setInput(TensorCodec.float32(new float[]{-1, -2, -3, -4, -5, -6}, 3, 2))
                        .removeDownstream(0)
                        .addTimings(mine)
                        .setEnvelope(io.butterfly.proto.worker.v1.PhaseEnvelope.newBuilder().setContract(wireContract)
                                .setInput(io.butterfly.proto.worker.v1.TensorMetadata.newBuilder()
                                        .setDtype(io.butterfly.proto.common.v1.DType.FLOAT32).addShape(3).addShape(2)
                                        .setLayout("row-major-le")))
                        .addHashes(io.butterfly.proto.worker.v1.StageHashes.newBuilder().setNodeId("w1")
                                .setContract(wireContract).addOutputHashes(11).addOutputHashes(-12));
                // each sequence's input hash on the next stage is its output hash here
                expected.getSequencesBuilder(0).setInputHash(11);
                expected.getSequencesBuilder(1).setInputHash(-12);
                assertThat(handedOn).isEqualTo(expected.build());
            } finally {
                nextStages.close();
                coordinators.close();
            }
        }
    }

    @Test
    void aStepWithoutReplyToHasNoneAndItsAbsentInputIsRefusedWhenRead() {
        Step step = WorkerMessages.step(ForwardRequest.newBuilder().setTaskId("t").build());
        assertThat(step.replyTo()).isNull();
        assertThat(step.downstream()).isEmpty();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> step.input().tokenIds("input token ids"))
                .hasMessageContaining("input token ids");
    }

    private static Endpoint endpoint(String node, int port) {
        return Endpoint.newBuilder().setNodeId(node).setHost("127.0.0.1").setGrpcPort(port).build();
    }
}
