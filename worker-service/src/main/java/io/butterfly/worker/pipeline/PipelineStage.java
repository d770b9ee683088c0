package io.butterfly.worker.pipeline;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.tensor.TensorCodec;
import io.butterfly.proto.common.v1.DType;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.ReleaseRequest;
import io.butterfly.proto.worker.v1.ReleaseResponse;
import io.butterfly.proto.worker.v1.SequenceSlice;
import io.butterfly.proto.worker.v1.StageTiming;
import io.butterfly.proto.worker.v1.StepFailure;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.worker.cluster.Endpoints;
import io.butterfly.worker.cluster.PeerChannels;
import io.butterfly.worker.config.WorkerProperties;
import io.butterfly.worker.engine.CacheBudgetExceededException;
import io.butterfly.worker.engine.PartitionExecutor;
import io.butterfly.worker.engine.PartitionSpec;
import io.butterfly.worker.engine.SequenceConflictException;
import io.butterfly.worker.engine.SequenceChunk;
import io.butterfly.worker.engine.StageInput;
import io.butterfly.worker.engine.StageResult;
import io.butterfly.worker.partition.PartitionManager;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

/**
 * This worker's place in the pipeline: checks a step's input, runs the local layers, and hands the
 * activations on to the next stage; the last stage sends the logits straight to the waiting coordinator.
 */
@Service
public class PipelineStage {

    private static final Logger log = LoggerFactory.getLogger(PipelineStage.class);

    private final PartitionManager partitions;
    private final PeerChannels channels;
    private final StepStreams streams;
    private final WorkerProperties props;
    /** The engine runs one step at a time; KV caches are per sequence. */
    private final Object engineLock = new Object();
    private volatile long stepsExecuted;
    private volatile long computeNanosTotal;

    public PipelineStage(PartitionManager partitions, PeerChannels channels, StepStreams streams, WorkerProperties props) {
        this.partitions = partitions;
        this.channels = channels;
        this.streams = streams;
        this.props = props;
    }

    /**
     * Runs one step that arrived on a Steps stream and hands it on: to the next stage, or (last stage) its
     * logits to the coordinator in {@code reply_to}. A step that fails here is reported there too, with the
     * error code and status this stage would have answered a call with; it never breaks the stream.
     */
    public void accept(ForwardRequest request) {
        long entry = System.nanoTime();
        try {
            run(request, entry);
        } catch (RuntimeException | OutOfMemoryError e) { // reported, never thrown into the shared stream
            ButterflyException failure = classify(e);
            if (failure.code() == ErrorCode.INTERNAL_ERROR) {
                log.error("step {} of task {} failed", request.getStep(), request.getTaskId(), e);
            }
            report(request, StepOutcome.newBuilder().setFailure(failureOf(failure)), entry, 0);
        }
    }

    /** The code and status this stage would answer a call with. */
    static ButterflyException classify(Throwable e) {
        if (e instanceof SequenceConflictException conflict) {
            return new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION, conflict.getMessage());
        }
        if (e instanceof CacheBudgetExceededException full) {
            return new ButterflyException(ErrorCode.INSUFFICIENT_MEMORY,
                    full.neverFits() ? ErrorKind.OUT_OF_RANGE : ErrorKind.RESOURCE_EXHAUSTED, full.getMessage());
        }
        return GrpcErrors.classify(e);
    }

    private void run(ForwardRequest request, long entry) {
        if (!request.hasReplyTo()) {
            throw new IllegalArgumentException("reply_to must name the coordinator waiting for the step");
        }
        Endpoints.requireValid(request.getReplyTo(), "reply_to");
        for (int i = 0; i < request.getDownstreamCount(); i++) {
            Endpoints.requireValid(request.getDownstream(i), "downstream[" + i + "]");
        }
        // The epoch is read on both sides of the executor: epochs only grow, so if it did not change, the
        // executor is of that epoch (not one an assignment replaced between the two reads).
        long epoch = partitions.status().epoch();
        PartitionExecutor executor = partitions.executor();
        if (partitions.status().epoch() != epoch) {
            throw new ButterflyException(ErrorCode.STALE_TERM, ErrorKind.ABORTED,
                    "this worker's partition changed from epoch " + epoch + " while the step of epoch "
                            + request.getEpoch() + " arrived");
        }
        if (request.getEpoch() != epoch) {
            throw new ButterflyException(ErrorCode.STALE_TERM, ErrorKind.ABORTED,
                    "step carries epoch " + request.getEpoch() + " but this worker's partition is of epoch " + epoch);
        }
        PartitionSpec spec = executor.spec();
        // Routing is checked before the step runs: a refused step must not have advanced the KV cache.
        if (spec.hasHead() && request.getDownstreamCount() > 0) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION,
                    "this worker holds the LM head (last stage) but the step names " + request.getDownstreamCount() + " more stage(s)");
        }
        if (!spec.hasHead() && request.getDownstreamCount() == 0) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION,
                    "layers [" + spec.layerStart() + ", " + spec.layerEnd() + ") are not the last stage but the step names no next stage");
        }
        List<SequenceChunk> batch = batch(request);
        int totalTokens = 0;
        for (SequenceChunk chunk : batch) {
            totalTokens += chunk.numTokens();
        }
        StageInput input = input(request, spec, totalTokens);

        long t0 = System.nanoTime();
        StageResult result;
        synchronized (engineLock) {
            result = executor.forward(batch, input);
        }
        long computeNanos = System.nanoTime() - t0;
        synchronized (this) { // steps of several streams run at once; the counters are metrics, not the engine's lock
            stepsExecuted++;
            computeNanosTotal += computeNanos;
        }

        if (result.logits()) {
            report(request, StepOutcome.newBuilder().setLogits(TensorCodec.float32(result.littleEndianFloats(), result.shape())),
                    entry, computeNanos);
            return;
        }
        Endpoint next = request.getDownstream(0);
        ForwardRequest.Builder nextRequest = request.toBuilder()
                .setInput(TensorCodec.float32(result.littleEndianFloats(), result.shape()))
                .clearDownstream()
                .addAllDownstream(request.getDownstreamList().subList(1, request.getDownstreamCount()));
        nextRequest.addTimings(timing(entry, computeNanos));
        streams.toStage(next, nextRequest.build());
    }

    private void report(ForwardRequest request, StepOutcome.Builder outcome, long entry, long computeNanos) {
        outcome.setTaskId(request.getTaskId()).setStep(request.getStep())
                .addAllTimings(request.getTimingsList())
                .addTimings(timing(entry, computeNanos));
        String unusable = unusableReplyTo(request);
        if (unusable == null) {
            streams.toCoordinator(request.getReplyTo(), outcome.build());
        } else {
            log.warn("outcome of step {} of task {} dropped: {}", request.getStep(), request.getTaskId(), unusable);
        }
    }

    /** Why the step's reply_to cannot be answered, or null if it can. */
    private static String unusableReplyTo(ForwardRequest request) {
        return request.hasReplyTo() ? Endpoints.problem(request.getReplyTo(), "reply_to")
                : "it names no coordinator to reply to";
    }

    private StageTiming timing(long entry, long computeNanos) {
        return StageTiming.newBuilder().setNodeId(props.nodeId()).setComputeNanos(computeNanos)
                .setWallNanos(System.nanoTime() - entry).build();
    }

    private StepFailure failureOf(ButterflyException e) {
        return StepFailure.newBuilder().setNodeId(props.nodeId()).setCode(GrpcErrors.toProto(e.code()))
                .setGrpcStatus(GrpcErrors.statusCode(e.kind()).value())
                .setMessage(e.getMessage() == null ? e.code().name() : e.getMessage())
                .putAllContext(e.context()).build();
    }

    /**
     * Frees the sequences here and asks the next stage to do the same (best effort). The next stage is asked
     * first and on its own: neither a partition that is not ready here nor a wait for the engine (behind long
     * prefills) nor the caller's deadline may keep the later stages from freeing theirs.
     */
    public void release(ReleaseRequest request) {
        if (request.getDownstreamCount() > 0) {
            Endpoint next = Endpoints.requireValid(request.getDownstream(0), "downstream[0]");
            ReleaseRequest onward = request.toBuilder().clearDownstream()
                    .addAllDownstream(request.getDownstreamList().subList(1, request.getDownstreamCount())).build();
            Context.ROOT.run(() -> WorkerServiceGrpc.newStub(channels.get(next.getHost(), next.getGrpcPort()))
                    .withDeadlineAfter(10, TimeUnit.SECONDS).release(onward, new StreamObserver<>() {
                        @Override
                        public void onNext(ReleaseResponse value) {
                        }

                        @Override
                        public void onError(Throwable t) {
                            log.warn("release on {} failed: {}", next.getNodeId(), Status.fromThrowable(t));
                        }

                        @Override
                        public void onCompleted() {
                        }
                    }));
        }
        PartitionExecutor executor;
        try {
            executor = partitions.executor();
        } catch (ButterflyException notReady) {
            return; // nothing is cached here
        }
        synchronized (engineLock) {
            request.getSequenceIdsList().forEach(executor::release);
        }
    }

    private static List<SequenceChunk> batch(ForwardRequest request) {
        if (request.getSequencesCount() == 0) {
            throw new IllegalArgumentException("sequences must not be empty");
        }
        List<SequenceChunk> batch = new ArrayList<>(request.getSequencesCount());
        for (SequenceSlice s : request.getSequencesList()) {
            if (s.getSequenceId().isBlank() || s.getNumTokens() <= 0 || s.getPosition() < 0 || s.getReservePositions() < 0) {
                throw new IllegalArgumentException("sequence '" + s.getSequenceId()
                        + "' needs an id, num_tokens > 0, position >= 0 and reserve_positions >= 0");
            }
            batch.add(new SequenceChunk(s.getSequenceId(), s.getPosition(), s.getNumTokens(), s.getReservePositions()));
        }
        return batch;
    }

    private static StageInput input(ForwardRequest request, PartitionSpec spec, int totalTokens) {
        if (spec.hasEmbedding()) {
            long[] ids = TensorCodec.toLongs(request.getInput(), 1, "input token ids");
            if (ids.length != totalTokens) {
                throw new IllegalArgumentException(ids.length + " token ids for " + totalTokens + " tokens in the batch");
            }
            int vocab = spec.config().vocabSize();
            for (long id : ids) {
                if (id < 0 || id >= vocab) {
                    throw new IllegalArgumentException("token id " + id + " is outside the vocabulary [0, " + vocab + ")");
                }
            }
            return new StageInput.Tokens(ids);
        }
        var data = TensorCodec.verify(request.getInput(), DType.FLOAT32, 2, "input hidden states");
        long rows = request.getInput().getShape(0);
        long cols = request.getInput().getShape(1);
        if (rows != totalTokens || cols != spec.config().hiddenSize()) {
            throw new IllegalArgumentException("hidden states of shape [" + rows + ", " + cols + "] do not match ["
                    + totalTokens + ", " + spec.config().hiddenSize() + "]");
        }
        return new StageInput.Hidden(data);
    }

    public long stepsExecuted() {
        return stepsExecuted;
    }

    public long computeNanosTotal() {
        return computeNanosTotal;
    }
}
