package io.butterfly.worker.pipeline;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.grpc.OneWayStreams;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.StepFailure;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.worker.cluster.PeerChannels;
import io.butterfly.worker.config.WorkerProperties;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import jakarta.annotation.PreDestroy;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * This worker's outgoing one-way streams: steps to the next stage, outcomes to coordinators. When the
 * stream to the next stage breaks, the coordinators of the steps last sent on it are told at once
 * (UNAVAILABLE) rather than left to time out.
 */
@Component
public class StepStreams {

    private static final Logger log = LoggerFactory.getLogger(StepStreams.class);

    /** What the broken-stream report needs of a step sent downstream. */
    private record SentStep(String taskId, int step, Endpoint replyTo) {
    }

    private final OneWayStreams<ForwardRequest, SentStep> stages;
    private final OneWayStreams<StepOutcome, String> coordinators;
    private final String nodeId;

    public StepStreams(PeerChannels channels, WorkerProperties props) {
        this.nodeId = props.nodeId();
        this.stages = new OneWayStreams<>(channels::get,
                (ch, r) -> WorkerServiceGrpc.newStub(ch).steps(OneWayStreams.answers(r)),
                req -> new SentStep(req.getTaskId(), req.getStep(), req.getReplyTo()),
                this::nextStageBroke);
        this.coordinators = new OneWayStreams<>(channels::get,
                (ch, r) -> CoordinatorServiceGrpc.newStub(ch).stepOutcomes(OneWayStreams.answers(r)),
                StepOutcome::getTaskId,
                (address, recent, status) -> log.warn("outcome stream to coordinator {} broke: {}", address, status));
    }

    /** Hands a step to the next stage; UNAVAILABLE if its stream cannot take it. */
    void toStage(Endpoint next, ForwardRequest request) {
        try {
            stages.send(next.getHost(), next.getGrpcPort(), request);
        } catch (StatusRuntimeException e) {
            throw unreachable(next.getHost() + ":" + next.getGrpcPort(), e.getStatus());
        }
    }

    /** Sends a step's outcome to the coordinator waiting for it (best effort: it times out otherwise). */
    void toCoordinator(Endpoint coordinator, StepOutcome outcome) {
        try {
            coordinators.send(coordinator.getHost(), coordinator.getGrpcPort(), outcome);
        } catch (StatusRuntimeException e) {
            log.warn("outcome of step {} of task {} not delivered to {}: {}", outcome.getStep(), outcome.getTaskId(),
                    coordinator.getNodeId(), e.getStatus());
        }
    }

    private void nextStageBroke(String address, List<SentStep> recent, Status status) {
        ButterflyException e = unreachable(address, status);
        for (SentStep s : recent) {
            toCoordinator(s.replyTo(), StepOutcome.newBuilder().setTaskId(s.taskId()).setStep(s.step())
                    .setFailure(StepFailure.newBuilder().setNodeId(nodeId).setCode(GrpcErrors.toProto(e.code()))
                            .setGrpcStatus(GrpcErrors.statusCode(e.kind()).value()).setMessage(e.getMessage()).putAllContext(e.context()))
                    .build());
        }
    }

    private static ButterflyException unreachable(String address, Status status) {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE,
                "next stage " + address + " unreachable: " + status.getCode() + " " + status.getDescription(),
                java.util.Map.of("unreachable", address), null);
    }


    @PreDestroy
    void close() {
        stages.closeAll();
        coordinators.closeAll();
    }
}
