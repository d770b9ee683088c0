package io.butterfly.worker.gateway;

import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.tensor.TensorCodec;
import io.butterfly.proto.worker.v1.HeadsRequest;
import io.butterfly.proto.worker.v1.HeadsResponse;
import io.butterfly.proto.worker.v1.SequenceSlice;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.butterfly.worker.engine.HeadPlacement;
import io.butterfly.worker.engine.RemoteHeads;
import io.butterfly.worker.engine.SequenceChunk;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Asks the workers holding a head-parallel stage's other shards for their partials (WorkerService.Heads), over the
 * peers' channels; every tensor with its dtype, shape and hash, checked on arrival.
 */
public class HeadGateway implements RemoteHeads {

    /** A shard that does not answer within this fails the step (retried by the coordinator). */
    static final long DEADLINE_SECONDS = 30;
    private static final java.util.concurrent.Executor ON_TRANSPORT_THREAD = Runnable::run;

    private final PeerChannels channels;

    public HeadGateway(PeerChannels channels) {
        this.channels = channels;
    }

    @Override
    public CompletableFuture<float[]> attention(HeadPlacement.Holder shard, int layer, List<SequenceChunk> batch,
                                                int rows, float[] x, List<String> released) {
        HeadsRequest.Builder request = request(shard, layer, rows, x).setMlp(false).addAllReleased(released);
        batch.forEach(c -> request.addBatch(SequenceSlice.newBuilder().setSequenceId(c.sequenceId())
                .setPosition(c.position()).setNumTokens(c.numTokens())));
        return call(shard, request.build(), x.length);
    }

    @Override
    public CompletableFuture<float[]> mlp(HeadPlacement.Holder shard, int layer, int rows, float[] x) {
        return call(shard, request(shard, layer, rows, x).setMlp(true).build(), x.length);
    }

    private static HeadsRequest.Builder request(HeadPlacement.Holder shard, int layer, int rows, float[] x) {
        return HeadsRequest.newBuilder().setLayer(layer).setFirstSlice(shard.slices().first())
                .setEndSlice(shard.slices().end()).setInput(TensorCodec.float32(x, rows, x.length / rows));
    }

    private CompletableFuture<float[]> call(HeadPlacement.Holder shard, HeadsRequest request, int length) {
        CompletableFuture<float[]> partial = new CompletableFuture<>();
        String who = "head shard " + shard.nodeId();
        WorkerServiceGrpc.newStub(channels.get(shard.host(), shard.port()))
                .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
                // the answer is checked and merged on the transport thread that read it: the step's engine thread,
                // waiting for it, is the one thread woken (not the channel's executor's first)
                .withExecutor(ON_TRANSPORT_THREAD)
                .heads(request, new StreamObserver<>() {
                    @Override
                    public void onNext(HeadsResponse r) {
                        try {
                            float[] values = TensorCodec.toFloats(r.getPartial(), 2, who + "'s partial");
                            if (values.length != length) {
                                throw new IllegalStateException(who + " answered shape " + r.getPartial().getShapeList()
                                        + " for " + length + " values");
                            }
                            partial.complete(values);
                        } catch (RuntimeException e) {
                            partial.completeExceptionally(e);
                        }
                    }

                    @Override
                    public void onError(Throwable t) {
                        partial.completeExceptionally(GrpcErrors.fromRemote(t, who));
                    }

                    @Override
                    public void onCompleted() {
                        partial.completeExceptionally(new IllegalStateException(who + " answered nothing"));
                    }
                });
        return partial;
    }
}
