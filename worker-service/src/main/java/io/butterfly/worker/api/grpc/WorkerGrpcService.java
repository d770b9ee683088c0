package io.butterfly.worker.api.grpc;

import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.AssignPartitionResponse;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.ForwardResponse;
import io.butterfly.proto.worker.v1.ReleaseRequest;
import io.butterfly.proto.worker.v1.ReleaseResponse;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.worker.partition.PartitionManager;
import io.butterfly.worker.pipeline.PipelineStage;
import io.grpc.stub.StreamObserver;
import org.springframework.stereotype.Service;

/** gRPC edge of the worker; errors go through the service's single exception handler. */
@Service
public class WorkerGrpcService extends WorkerServiceGrpc.WorkerServiceImplBase {

    private final PartitionManager partitions;
    private final PipelineStage stage;

    public WorkerGrpcService(PartitionManager partitions, PipelineStage stage) {
        this.partitions = partitions;
        this.stage = stage;
    }

    @Override
    public void assignPartition(AssignPartitionRequest request, StreamObserver<AssignPartitionResponse> response) {
        partitions.assign(request);
        response.onNext(AssignPartitionResponse.newBuilder().setAccepted(true).build());
        response.onCompleted();
    }

    @Override
    public void forward(ForwardRequest request, StreamObserver<ForwardResponse> response) {
        response.onNext(stage.forward(request));
        response.onCompleted();
    }

    @Override
    public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> response) {
        stage.release(request);
        response.onNext(ReleaseResponse.getDefaultInstance());
        response.onCompleted();
    }
}
