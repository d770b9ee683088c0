package io.butterfly.worker.gateway;

import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.tensor.TensorCodec;
import io.butterfly.proto.worker.v1.ExpertsRequest;
import io.butterfly.proto.worker.v1.ExpertsResponse;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.worker.engine.ExpertExchange;
import io.butterfly.worker.engine.ExpertPlacement;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Asks the workers holding a stage's other expert groups for their sums (WorkerService.Experts), over the peers'
 * channels; every tensor with its dtype, shape and hash, checked on arrival.
 */
public class ExpertGateway implements ExpertExchange {

    /** A group that does not answer within this fails the step (retried by the coordinator). */
    static final long DEADLINE_SECONDS = 30;

    private final PeerChannels channels;

    public ExpertGateway(PeerChannels channels) {
        this.channels = channels;
    }

    @Override
    public CompletableFuture<float[]> partial(ExpertPlacement.Group group, int layer, int rows, float[] hidden,
                                              long[] chosen, float[] weights) {
        int width = hidden.length / rows;
        int topK = chosen.length / rows;
        ExpertsRequest request = ExpertsRequest.newBuilder().setLayer(layer).setFirstExpert(group.first())
                .setEndExpert(group.end()).setHidden(TensorCodec.float32(hidden, rows, width))
                .setChosen(TensorCodec.int64(chosen, rows, topK)).setWeights(TensorCodec.float32(weights, rows, topK))
                .build();
        CompletableFuture<float[]> sum = new CompletableFuture<>();
        WorkerServiceGrpc.newStub(channels.get(group.host(), group.port()))
                .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
                .experts(request, new StreamObserver<>() {
                    @Override
                    public void onNext(ExpertsResponse r) {
                        try {
                            float[] values = TensorCodec.toFloats(r.getSum(), 2, "expert group " + group.nodeId() + "'s sum");
                            if (r.getSum().getShape(0) != rows || r.getSum().getShape(1) != width) {
                                throw new IllegalStateException("expert group " + group.nodeId() + " answered shape "
                                        + r.getSum().getShapeList() + " for " + rows + " rows of " + width);
                            }
                            sum.complete(values);
                        } catch (RuntimeException e) {
                            sum.completeExceptionally(e);
                        }
                    }

                    @Override
                    public void onError(Throwable t) {
                        sum.completeExceptionally(GrpcErrors.fromRemote(t, "expert group " + group.nodeId()));
                    }

                    @Override
                    public void onCompleted() {
                        sum.completeExceptionally(new IllegalStateException("expert group " + group.nodeId()
                                + " answered nothing"));
                    }
                });
        return sum;
    }
}
