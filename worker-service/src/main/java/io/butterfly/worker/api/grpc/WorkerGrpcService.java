package io.butterfly.worker.api.grpc;

import io.butterfly.common.grpc.CallerInterceptor;
import io.butterfly.common.grpc.OneWayReceiver;
import io.butterfly.common.identity.Caller;
import io.butterfly.common.identity.NodeRole;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.AssignPartitionResponse;
import io.butterfly.proto.worker.v1.ChecksumReport;
import io.butterfly.proto.worker.v1.ChecksumRequest;
import io.butterfly.proto.worker.v1.DismissRequest;
import io.butterfly.proto.worker.v1.DismissResponse;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.ReleaseRequest;
import io.butterfly.proto.worker.v1.ReleaseResponse;
import io.butterfly.proto.worker.v1.StreamClosed;
import io.butterfly.proto.worker.v1.ValidationAck;
import io.butterfly.proto.worker.v1.ValidationResult;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.worker.gateway.CoordinatorGateway;
import io.butterfly.worker.gateway.DiscoveryGateway;
import io.butterfly.worker.partition.PartitionChecksums;
import io.butterfly.worker.partition.PartitionManager;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.tensor.TensorCodec;
import io.butterfly.proto.worker.v1.ExpertsRequest;
import io.butterfly.proto.worker.v1.ExpertsResponse;
import io.butterfly.proto.worker.v1.HeadsRequest;
import io.butterfly.proto.worker.v1.HeadsResponse;
import io.butterfly.worker.engine.SequenceChunk;
import io.butterfly.worker.pipeline.PipelineStage;
import io.grpc.stub.StreamObserver;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

/**
 * gRPC edge of the worker; errors go through the service's single exception handler. Over mutual TLS each call is
 * taken only from whom it may come from, as the caller's certificate says ({@code CallerTables.WORKER}): assignments, checksum
 * requests, verdicts and dismissals from coordinators; steps and releases from either, a step into the first stage
 * from a coordinator and into a later stage from a worker (the stage before it).
 */
@Service
public class WorkerGrpcService extends WorkerServiceGrpc.WorkerServiceImplBase {

    private static final Logger log = LoggerFactory.getLogger(WorkerGrpcService.class);

    private final PartitionManager partitions;
    private final PipelineStage stage;
    private final PartitionChecksums checksums;
    private final CoordinatorGateway coordinators;
    private final DiscoveryGateway membership;

    public WorkerGrpcService(PartitionManager partitions, PipelineStage stage, PartitionChecksums checksums,
                             CoordinatorGateway coordinators, DiscoveryGateway membership) {
        this.partitions = partitions;
        this.stage = stage;
        this.checksums = checksums;
        this.coordinators = coordinators;
        this.membership = membership;
    }

    /**
     * A drained worker leaves the cluster: its partition is freed (fenced like an assignment), it stops heartbeating
     * and leaves discovery. The process stays up, idle, until it is stopped; started again, it joins as a spare.
     */
    @Override
    public void dismiss(DismissRequest request, StreamObserver<DismissResponse> response) {
        partitions.dismiss(request.getEpoch(), request.getTerm());
        coordinators.detach();
        membership.close();
        log.info("left the cluster (epoch {}, term {}): {}", request.getEpoch(), request.getTerm(), request.getReason());
        response.onNext(DismissResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void reportChecksums(ChecksumRequest request, StreamObserver<ChecksumReport> response) {
        response.onNext(WorkerMessages.checksumReport(checksums.report(request.getEpoch())));
        response.onCompleted();
    }

    @Override
    public void applyValidation(ValidationResult request, StreamObserver<ValidationAck> response) {
        boolean contributed = checksums.apply(WorkerMessages.verdict(request));
        response.onNext(ValidationAck.newBuilder().setContributed(contributed).build());
        response.onCompleted();
    }

    @Override
    public void assignPartition(AssignPartitionRequest request, StreamObserver<AssignPartitionResponse> response) {
        partitions.assign(WorkerMessages.assignment(request));
        response.onNext(AssignPartitionResponse.newBuilder().setAccepted(true).build());
        response.onCompleted();
    }

    /**
     * Steps arrive in order on the stream and run one after another on the engine thread; each is handed on, never
     * answered. This handler only checks the caller and queues the step.
     */
    @Override
    public StreamObserver<ForwardRequest> steps(StreamObserver<StreamClosed> closed) {
        Caller caller = CallerInterceptor.current();
        return OneWayReceiver.of(request -> {
            // Token ids enter the pipeline from a coordinator; hidden states come from the stage before.
            if (partitions.status().hasEmbedding()) {
                caller.requireRole("a step into the first stage", NodeRole.COORDINATOR);
            } else {
                caller.requireRole("a step into a later stage", NodeRole.WORKER);
            }
            stage.enqueue(WorkerMessages.step(request));
        }, closed);
    }

    /** An expert group's sum for a stage's step, computed on this call's thread (see DjlPartitionExecutor#expertGroup). */
    @Override
    public void experts(ExpertsRequest request, StreamObserver<ExpertsResponse> response) {
        float[] sum;
        long rows;
        try {
            CallerInterceptor.current().requireRole("an expert group's sum", NodeRole.WORKER);
            float[] hidden = TensorCodec.toFloats(request.getHidden(), 2, "hidden");
            long[] chosen = TensorCodec.toLongs(request.getChosen(), 2, "chosen");
            float[] weights = TensorCodec.toFloats(request.getWeights(), 2, "weights");
            rows = request.getHidden().getShape(0);
            if (request.getChosen().getShape(0) != rows || request.getWeights().getShape(0) != rows) {
                throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT,
                        "hidden, chosen and weights must have the same rows");
            }
            sum = partitions.expertGroup(request.getLayer(), request.getFirstExpert(), request.getEndExpert(),
                    Math.toIntExact(rows), hidden, chosen, weights);
        } catch (RuntimeException e) {
            response.onError(GrpcErrors.toStatus(GrpcErrors.classify(e)));
            return;
        }
        response.onNext(ExpertsResponse.newBuilder()
                .setSum(TensorCodec.float32(sum, rows, request.getHidden().getShape(1))).build());
        response.onCompleted();
    }

    /**
     * A head shard's partial of a layer's half for a head-parallel stage's step (docs/sharding.md). Runs on the
     * transport thread that read the request ({@link GrpcServerConfiguration}): checked and converted here, computed
     * and answered from the engine thread, without waiting.
     */
    @Override
    public void heads(HeadsRequest request, StreamObserver<HeadsResponse> response) {
        try {
            CallerInterceptor.current().requireRole("a head shard's partial", NodeRole.WORKER);
            float[] input = TensorCodec.toFloats(request.getInput(), 2, "input");
            long rows = request.getInput().getShape(0);
            long hidden = request.getInput().getShape(1);
            List<SequenceChunk> batch = request.getMlp() ? null : request.getBatchList().stream()
                    .map(c -> new SequenceChunk(c.getSequenceId(), c.getPosition(), c.getNumTokens())).toList();
            partitions.headShardLater(request.getLayer(), request.getFirstSlice(), request.getEndSlice(), batch, input,
                    request.getReleasedList(), (partial, failure) -> {
                        if (failure != null) {
                            response.onError(GrpcErrors.toStatus(GrpcErrors.classify(failure)));
                            return;
                        }
                        response.onNext(HeadsResponse.newBuilder()
                                .setPartial(TensorCodec.float32(partial, rows, hidden)).build());
                        response.onCompleted();
                    });
        } catch (RuntimeException e) {
            response.onError(GrpcErrors.toStatus(GrpcErrors.classify(e)));
        }
    }

    @Override
    public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> response) {
        stage.release(request.getSequenceIdsList(), WorkerMessages.endpoints(request.getDownstreamList()));
        response.onNext(ReleaseResponse.getDefaultInstance());
        response.onCompleted();
    }
}
