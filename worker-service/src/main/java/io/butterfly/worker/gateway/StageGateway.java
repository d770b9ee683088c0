package io.butterfly.worker.gateway;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.OneWayStreams;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.ReleaseRequest;
import io.butterfly.proto.worker.v1.ReleaseResponse;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.engine.StageResult;
import io.butterfly.worker.pipeline.Downstream;
import io.butterfly.worker.pipeline.StageClock;
import io.butterfly.worker.pipeline.StageHashes;
import io.butterfly.worker.pipeline.Step;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This worker's line to the next pipeline stages: steps on a one-way stream per next stage, releases passed on.
 * When the stream to a next stage breaks, the coordinators of the steps last sent on it are told at once
 * (UNAVAILABLE) rather than left to time out.
 */
public class StageGateway implements Downstream {

    private static final Logger log = LoggerFactory.getLogger(StageGateway.class);

    /** What the broken-stream report needs of a step sent downstream. */
    private record SentStep(String taskId, int step, io.butterfly.proto.worker.v1.Endpoint replyTo) {
    }

    private final OneWayStreams.Channels channels;
    private final OneWayStreams<ForwardRequest, SentStep> stages;
    private final CoordinatorGateway coordinators;
    private final String nodeId;

    /** @param coordinators where the steps lost with a broken stream are reported */
    public StageGateway(OneWayStreams.Channels channels, CoordinatorGateway coordinators, String nodeId) {
        this.channels = channels;
        this.coordinators = coordinators;
        this.nodeId = nodeId;
        this.stages = new OneWayStreams<>(channels,
                (ch, r) -> WorkerServiceGrpc.newStub(ch).steps(OneWayStreams.answers(r)),
                req -> new SentStep(req.getTaskId(), req.getStep(), req.getReplyTo()),
                this::nextStageBroke);
    }

    @Override
    public void forward(Step step, StageResult hidden, StageClock here, StageHashes hashes) {
        Endpoint next = step.downstream().get(0);
        ForwardRequest request = GatewayMessages.forward(step, hidden, here, hashes);
        try {
            stages.send(next.host(), next.grpcPort(), request);
        } catch (StatusRuntimeException e) {
            throw unreachable(next.address(), e.getStatus());
        }
    }

    @Override
    public void release(Endpoint next, List<String> sequenceIds, List<Endpoint> rest) {
        ReleaseRequest onward = ReleaseRequest.newBuilder().addAllSequenceIds(sequenceIds)
                .addAllDownstream(rest.stream().map(GatewayMessages::endpoint).toList()).build();
        // Not under the caller's deadline or cancellation: the later stages must free theirs whatever happens here.
        Context.ROOT.run(() -> WorkerServiceGrpc.newStub(channels.get(next.host(), next.grpcPort()))
                .withDeadlineAfter(10, TimeUnit.SECONDS).release(onward, new StreamObserver<>() {
                    @Override
                    public void onNext(ReleaseResponse value) {
                    }

                    @Override
                    public void onError(Throwable t) {
                        log.warn("release on {} failed: {}", next.nodeId(), Status.fromThrowable(t));
                    }

                    @Override
                    public void onCompleted() {
                    }
                }));
    }

    private void nextStageBroke(String address, List<SentStep> recent, Status status) {
        ButterflyException e = unreachable(address, status);
        for (SentStep s : recent) {
            coordinators.send(s.replyTo(), StepOutcome.newBuilder().setTaskId(s.taskId()).setStep(s.step())
                    .setFailure(GatewayMessages.failure(nodeId, e)).build());
        }
    }

    private static ButterflyException unreachable(String address, Status status) {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE,
                "next stage " + address + " unreachable: " + status.getCode() + " " + status.getDescription(),
                Map.of("unreachable", address), null);
    }

    /** Ends every stream (on shutdown). */
    public void close() {
        stages.closeAll();
    }
}
