package io.butterfly.coordinator.gateway.worker;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.grpc.OneWayStreams;
import io.butterfly.common.identity.Caller;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.StepFailure;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Sends pipeline steps into the first stage's Steps stream and waits for each step's outcome, which the
 * last stage (or a failing one) sends straight back to this replica (CoordinatorService.StepOutcomes).
 */
final class PipelineSteps implements AutoCloseable {

    private record StepKey(String taskId, int step) {
    }

    /** A step waiting for its outcome, and the nodes of the pipeline it went into. */
    private record Pending(CompletableFuture<StepOutcome> outcome, Set<String> stages) {
    }

    private final Map<StepKey, Pending> waiting = new ConcurrentHashMap<>();
    private final OneWayStreams<ForwardRequest, StepKey> firstStages;
    private final long stepTimeoutSeconds;

    PipelineSteps(WorkerChannels channels, long stepTimeoutSeconds) {
        this.stepTimeoutSeconds = stepTimeoutSeconds;
        this.firstStages = new OneWayStreams<>((host, port) -> channels.channel("stage", host, port),
                (ch, r) -> WorkerServiceGrpc.newStub(ch).steps(OneWayStreams.answers(r)),
                req -> new StepKey(req.getTaskId(), req.getStep()),
                this::firstStageBroke);
    }

    /**
     * Sends one step through the pipeline of {@code stages}: {@code request} (whose {@code reply_to} is this replica)
     * goes to {@code first}. The future completes with the outcome carrying logits, or with the failing stage's
     * error; a step with no outcome within the step timeout fails with TIMEOUT.
     */
    CompletableFuture<StepOutcome> submit(Endpoint first, Set<String> stages, ForwardRequest request) {
        StepKey key = new StepKey(request.getTaskId(), request.getStep());
        CompletableFuture<StepOutcome> outcome = new CompletableFuture<>();
        Pending pending = new Pending(outcome, stages);
        waiting.put(key, pending);
        CompletableFuture<StepOutcome> answer = outcome
                .orTimeout(stepTimeoutSeconds, TimeUnit.SECONDS)
                .handle((done, failure) -> {
                    waiting.remove(key, pending);
                    if (failure != null) {
                        throw failure instanceof TimeoutException ? timedOut(request) : new CompletionException(failure);
                    }
                    if (done.hasFailure()) {
                        throw failure(done.getFailure(), request.getStep());
                    }
                    return done;
                });
        try {
            firstStages.send(first.getHost(), first.getGrpcPort(), request);
        } catch (StatusRuntimeException e) {
            outcome.completeExceptionally(new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE,
                    "pipeline step " + request.getStep() + ": first stage " + first.getNodeId() + " unreachable: "
                            + e.getStatus().getDescription(), Map.of("unreachable", first.getNodeId()), e));
        }
        return answer;
    }

    private ButterflyException timedOut(ForwardRequest request) {
        return new ButterflyException(ErrorCode.TIMEOUT, ErrorKind.DEADLINE_EXCEEDED,
                "pipeline step " + request.getStep() + " had no outcome within " + stepTimeoutSeconds + " s");
    }

    /**
     * An outcome arrived from {@code sender}, which must be a stage of the step's pipeline; one nobody waits for any
     * more (late, or reported twice) is dropped.
     */
    void received(StepOutcome outcome, Caller sender) {
        Pending p = waiting.get(new StepKey(outcome.getTaskId(), outcome.getStep()));
        if (p != null) {
            sender.requireWorkerAmong(p.stages(), "outcome of step " + outcome.getStep() + " of " + outcome.getTaskId());
            p.outcome().complete(outcome);
        }
    }

    /** An outcome made here (a stage unreachable). */
    private void complete(StepOutcome outcome) {
        received(outcome, Caller.PLAINTEXT);
    }

    /** Fails at once the steps waiting on {@code nodeId} (see {@code Pipeline#abortThrough}). */
    void abortThrough(String nodeId, String why) {
        waiting.forEach((key, p) -> {
            if (p.stages().contains(nodeId)) {
                p.outcome().complete(unreachable(key, nodeId, "stage " + nodeId + " was declared FAILED: " + why));
            }
        });
    }

    private void firstStageBroke(String address, List<StepKey> recent, Status status) {
        for (StepKey key : recent) {
            complete(unreachable(key, address,
                    "first stage " + address + " unreachable: " + status.getCode() + " " + status.getDescription()));
        }
    }

    /** The failed outcome of a step whose stage {@code node} cannot answer (UNAVAILABLE: the client may retry). */
    private static StepOutcome unreachable(StepKey key, String node, String message) {
        return StepOutcome.newBuilder().setTaskId(key.taskId()).setStep(key.step())
                .setFailure(StepFailure.newBuilder().setNodeId(node).setCode(GrpcErrors.toProto(ErrorCode.INTERNAL_ERROR))
                        .setGrpcStatus(Status.Code.UNAVAILABLE.value()).setMessage(message).putContext("unreachable", node))
                .build();
    }

    private static ButterflyException failure(StepFailure f, int step) {
        return new ButterflyException(GrpcErrors.fromProto(f.getCode()), GrpcErrors.kindOf(Status.fromCodeValue(f.getGrpcStatus()).getCode()),
                "pipeline step " + step + " failed on " + f.getNodeId() + ": " + f.getMessage(), f.getContextMap(), null);
    }

    @Override
    public void close() {
        firstStages.closeAll();
    }
}
