package io.butterfly.worker.gateway;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.tensor.TensorCodec;
import io.butterfly.proto.common.v1.GpuInfo;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.common.v1.StorageType;
import io.butterfly.proto.coordinator.v1.LoadPhase;
import io.butterfly.common.sampling.GreedyChoice;
import io.butterfly.proto.coordinator.v1.LoadReport;
import io.butterfly.common.verify.PrecisionContract;
import io.butterfly.proto.common.v1.DType;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.PhaseEnvelope;
import io.butterfly.proto.worker.v1.StageHashes;
import io.butterfly.proto.worker.v1.TensorMetadata;
import io.butterfly.proto.worker.v1.SequenceSlice;
import io.butterfly.proto.worker.v1.StageTiming;
import io.butterfly.proto.worker.v1.StepFailure;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.worker.capability.Capabilities;
import io.butterfly.worker.engine.StageResult;
import io.butterfly.worker.pipeline.StageClock;
import io.butterfly.worker.pipeline.Step;
import java.util.List;

/** The messages this worker sends, built from its domain types: the only place they are built. */
public final class GatewayMessages {

    private GatewayMessages() {
    }

    static Endpoint endpoint(io.butterfly.worker.cluster.Endpoint e) {
        return Endpoint.newBuilder().setNodeId(e.nodeId()).setHost(e.host()).setGrpcPort(e.grpcPort()).build();
    }

    static LoadReport loadReport(String nodeId, io.butterfly.worker.partition.LoadReport r) {
        LoadReport.Builder b = LoadReport.newBuilder().setNodeId(nodeId).setModelId(r.modelId()).setEpoch(r.epoch())
                .setPhase(LoadPhase.valueOf(r.phase().name()))
                .setProgress(r.progress()).setBytesDone(r.bytesDone()).setBytesTotal(r.bytesTotal())
                .setEstimatedCompletionSecs(r.estimatedCompletionSecs()).setWarmupStarted(r.warmupStarted())
                .setLoadMillis(r.loadMillis()).setWarmupMillis(r.warmupMillis()).setMemoryBytes(r.memoryBytes())
                .setWarmupSuccess(r.warmupSuccess()).setKvCacheBudgetBytes(r.kvCacheBudgetBytes());
        if (r.currentFile() != null) {
            b.setCurrentFile(r.currentFile());
        }
        if (r.partitionChecksum() != null) {
            b.setPartitionChecksum(r.partitionChecksum());
        }
        if (r.errorCode() != null) {
            b.setErrorCode(GrpcErrors.toProto(r.errorCode()));
        }
        if (r.errorMessage() != null) {
            b.setErrorMessage(r.errorMessage());
        }
        return b.build();
    }

    /**
     * The step for its next stage: everything as it arrived but the input (this stage's hidden states, wrapped, not
     * copied), the downstream (the first one removed), the timings (this stage's added once the input is encoded) and
     * the envelope (this stage's contract, the hidden states' metadata, each sequence's output hash as its input hash,
     * this stage's hashes after the others').
     */
    static ForwardRequest forward(Step step, StageResult hidden, StageClock here,
                                  io.butterfly.worker.pipeline.StageHashes hashes) {
        TensorMetadata.Builder metadata = TensorMetadata.newBuilder().setDtype(DType.FLOAT32)
                .setLayout(io.butterfly.common.verify.TensorMetadata.ROW_MAJOR_LE);
        for (long d : hidden.shape()) {
            metadata.addShape(d);
        }
        ForwardRequest.Builder b = ForwardRequest.newBuilder().setTaskId(step.taskId()).setStep(step.step())
                .setEpoch(step.epoch())
                .setInput(TensorCodec.float32(hidden.littleEndianFloats(), hidden.shape()))
                .setEnvelope(PhaseEnvelope.newBuilder().setContract(contract(hashes.contract())).setInput(metadata));
        for (int i = 0; i < step.sequences().size(); i++) {
            Step.Slice s = step.sequences().get(i);
            b.addSequences(SequenceSlice.newBuilder().setSequenceId(s.sequenceId()).setPosition(s.position())
                    .setNumTokens(s.numTokens()).setReservePositions(s.reservePositions())
                    .putAllTraceContext(s.traceContext()).setSkipLogits(s.skipLogits()).setGreedy(s.greedy())
                    .setGreedyAlternatives(s.greedyAlternatives()).setInputHash(hashes.outputHashes()[i])
                    .setLayerHashes(s.layerHashes()));
        }
        step.hashes().forEach(h -> b.addHashes(hashes(h)));
        b.addHashes(hashes(hashes));
        step.downstream().subList(1, step.downstream().size()).forEach(e -> b.addDownstream(endpoint(e)));
        if (step.replyTo() != null) {
            b.setReplyTo(endpoint(step.replyTo()));
        }
        return b.addAllTimings(timings(step.timings())).addTimings(timing(here.stop())).build();
    }

    static StepOutcome outcome(io.butterfly.worker.pipeline.StepOutcome o) {
        StepOutcome.Builder b = StepOutcome.newBuilder().setTaskId(o.taskId()).setStep(o.step());
        if (o.logits() != null) {
            b.setLogits(TensorCodec.float32(o.logits().littleEndianFloats(), o.logits().shape()));
            for (GreedyChoice g : o.greedy()) {
                io.butterfly.proto.worker.v1.GreedyChoice.Builder c = io.butterfly.proto.worker.v1.GreedyChoice.newBuilder()
                        .setTokenId(g.token()).setLogit(g.logit()).setLogZ(g.logZ());
                for (int j = 0; j < g.topIds().length; j++) {
                    c.addTopIds(g.topIds()[j]).addTopLogits(g.topLogits()[j]);
                }
                b.addGreedy(c);
            }
            o.hashes().forEach(h -> b.addHashes(hashes(h)));
        } else {
            b.setFailure(failure(o.failure().nodeId(), o.failure().error()));
        }
        return b.addAllTimings(timings(o.timings())).addTimings(timing(o.here().stop())).build();
    }

    static io.butterfly.proto.worker.v1.PrecisionContract contract(PrecisionContract c) {
        return io.butterfly.proto.worker.v1.PrecisionContract.newBuilder().setWeightFormat(c.weightFormat())
                .setComputeDtype(c.computeDtype()).setActivations(c.activations()).build();
    }

    private static StageHashes hashes(io.butterfly.worker.pipeline.StageHashes h) {
        StageHashes.Builder b = StageHashes.newBuilder().setNodeId(h.nodeId()).setContract(contract(h.contract()));
        for (long hash : h.outputHashes()) {
            b.addOutputHashes(hash);
        }
        for (io.butterfly.worker.pipeline.StageHashes.Layer l : h.layers()) {
            io.butterfly.proto.worker.v1.LayerHashes.Builder layer = io.butterfly.proto.worker.v1.LayerHashes.newBuilder()
                    .setLayer(l.layer());
            for (long hash : l.outputHashes()) {
                layer.addOutputHashes(hash);
            }
            b.addLayers(layer);
        }
        return b.build();
    }

    /** Why a step failed on {@code nodeId}: the error code and the gRPC status that stage would answer a call with. */
    static StepFailure failure(String nodeId, ButterflyException e) {
        return StepFailure.newBuilder().setNodeId(nodeId).setCode(GrpcErrors.toProto(e.code()))
                .setGrpcStatus(GrpcErrors.statusCode(e.kind()).value())
                .setMessage(e.getMessage() == null ? e.code().name() : e.getMessage())
                .putAllContext(e.context()).build();
    }

    private static List<StageTiming> timings(List<io.butterfly.worker.pipeline.StageTiming> timings) {
        return timings.stream().map(GatewayMessages::timing).toList();
    }

    private static StageTiming timing(io.butterfly.worker.pipeline.StageTiming t) {
        return StageTiming.newBuilder().setNodeId(t.nodeId()).setComputeNanos(t.computeNanos())
                .setWallNanos(t.wallNanos()).build();
    }

    /** The capabilities as this worker joins with them. */
    public static NodeCapabilities capabilities(Capabilities c) {
        NodeCapabilities.Builder b = NodeCapabilities.newBuilder().setCpuCores(c.cpuCores()).setMemoryBytes(c.memoryBytes())
                .setMemoryLimitBytes(c.memoryLimitBytes()).setMaxModelBytes(c.maxModelBytes()).setDevice(c.device())
                .setMeasuredGflops(c.measuredGflops()).setMemoryBandwidthGbps(c.memoryBandwidthGbps())
                .setStorageType(StorageType.valueOf(c.storageType().name())).setWeightBytes(c.weightBytes());
        c.gpus().forEach(g -> b.addGpus(GpuInfo.newBuilder().setIndex(g.index()).setName(g.name())));
        return b.build();
    }
}
