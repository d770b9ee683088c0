package io.butterfly.worker.api.grpc;

import io.butterfly.common.grpc.OneWayReceiver;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.AssignPartitionResponse;
import io.butterfly.proto.worker.v1.ChecksumReport;
import io.butterfly.proto.worker.v1.ChecksumRequest;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.ReleaseRequest;
import io.butterfly.proto.worker.v1.ReleaseResponse;
import io.butterfly.proto.worker.v1.StreamClosed;
import io.butterfly.proto.worker.v1.ValidationAck;
import io.butterfly.proto.worker.v1.ValidationResult;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.worker.partition.PartitionChecksums;
import io.butterfly.worker.partition.PartitionManager;
import io.butterfly.worker.pipeline.PipelineStage;
import io.grpc.stub.StreamObserver;
import org.springframework.stereotype.Service;

/** gRPC edge of the worker; errors go through the service's single exception handler. */
@Service
public class WorkerGrpcService extends WorkerServiceGrpc.WorkerServiceImplBase {

    private final PartitionManager partitions;
    private final PipelineStage stage;
    private final PartitionChecksums checksums;

    public WorkerGrpcService(PartitionManager partitions, PipelineStage stage, PartitionChecksums checksums) {
        this.partitions = partitions;
        this.stage = stage;
        this.checksums = checksums;
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

    /** Steps arrive in order on the stream and run one after another; each is handed on, never answered. */
    @Override
    public StreamObserver<ForwardRequest> steps(StreamObserver<StreamClosed> closed) {
        return OneWayReceiver.of(request -> stage.accept(WorkerMessages.step(request)), closed);
    }

    @Override
    public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> response) {
        stage.release(request.getSequenceIdsList(), WorkerMessages.endpoints(request.getDownstreamList()));
        response.onNext(ReleaseResponse.getDefaultInstance());
        response.onCompleted();
    }
}
