package io.butterfly.worker.api.grpc;

import io.butterfly.worker.engine.ExpertPlacement;
import io.butterfly.common.tensor.TensorCodec;
import io.butterfly.proto.common.v1.DType;
import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.common.v1.Tensor;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.ChecksumReport;
import io.butterfly.proto.worker.v1.FileChecksum;
import io.butterfly.common.verify.PrecisionContract;
import io.butterfly.common.verify.TensorMetadata;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.PhaseEnvelope;
import io.butterfly.proto.worker.v1.ValidationResult;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.partition.Assignment;
import io.butterfly.worker.partition.ValidationVerdict;
import io.butterfly.worker.pipeline.EncodedInput;
import io.butterfly.worker.pipeline.StageHashes;
import io.butterfly.worker.pipeline.StageTiming;
import io.butterfly.worker.pipeline.Step;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * The worker service's messages: what it receives as domain values, its answers as messages. Nothing here checks a
 * value: an absent field maps to its default (a step's reply_to to null), and the domain says what is wrong with it.
 */
final class WorkerMessages {

    private WorkerMessages() {
    }

    static Endpoint endpoint(io.butterfly.proto.worker.v1.Endpoint e) {
        return new Endpoint(e.getNodeId(), e.getHost(), e.getGrpcPort());
    }

    static List<Endpoint> endpoints(List<io.butterfly.proto.worker.v1.Endpoint> endpoints) {
        return endpoints.stream().map(WorkerMessages::endpoint).toList();
    }

    static Assignment assignment(AssignPartitionRequest r) {
        return new Assignment(r.getModelId(), r.getLayers().getStart(), r.getLayers().getEnd(), r.getHasEmbedding(),
                r.getHasHead(), r.getEpoch(), r.getTerm(), endpoint(r.getRegistry()), endpoint(r.getCoordinator()),
                endpoints(r.getCoordinatorReplicasList()), r.getStageKeptSinceEpoch(),
                r.getExpertGroupsList().stream().map(g -> new ExpertPlacement.Group(g.getNode().getNodeId(),
                        g.getNode().getHost(), g.getNode().getGrpcPort(), g.getFirstExpert(), g.getEndExpert())).toList(),
                r.getExpertGroup(), r.getStepsSinceEpoch(), r.getAudit());
    }

    /** The step; its input stays the received tensor, decoded only when the stage reads it. */
    static Step step(ForwardRequest r) {
        List<Step.Slice> sequences = r.getSequencesList().stream()
                .map(s -> new Step.Slice(s.getSequenceId(), s.getPosition(), s.getNumTokens(), s.getReservePositions(),
                        s.getTraceContextMap(), s.getSkipLogits(), s.getGreedy(), s.getGreedyAlternatives(),
                        s.getInputHash(), s.getLayerHashes()))
                .toList();
        List<StageTiming> timings = r.getTimingsList().stream()
                .map(t -> new StageTiming(t.getNodeId(), t.getComputeNanos(), t.getWallNanos())).toList();
        List<StageHashes> hashes = r.getHashesList().stream()
                .map(h -> new StageHashes(h.getNodeId(), h.hasContract() ? contract(h.getContract()) : null,
                        h.getOutputHashesList().stream().mapToLong(Long::longValue).toArray(),
                        h.getLayersList().stream().map(l -> new StageHashes.Layer(l.getLayer(),
                                l.getOutputHashesList().stream().mapToLong(Long::longValue).toArray())).toList()))
                .toList();
        return new Step(r.getTaskId(), r.getStep(), r.getEpoch(), sequences, new ReceivedTensor(r.getInput()),
                endpoints(r.getDownstreamList()), r.hasReplyTo() ? endpoint(r.getReplyTo()) : null, timings,
                r.hasEnvelope() ? envelope(r.getEnvelope()) : null, hashes);
    }

    private static Step.Envelope envelope(PhaseEnvelope e) {
        TensorMetadata input = e.hasInput() ? new TensorMetadata(e.getInput().getDtype().name(),
                e.getInput().getShapeList(), e.getInput().getLayout()) : null;
        return new Step.Envelope(e.hasContract() ? contract(e.getContract()) : null, input);
    }

    private static PrecisionContract contract(io.butterfly.proto.worker.v1.PrecisionContract c) {
        return new PrecisionContract(c.getWeightFormat(), c.getComputeDtype(), c.getActivations());
    }

    static ValidationVerdict verdict(ValidationResult r) {
        return new ValidationVerdict(r.getEpoch(), r.getStatus().name(), r.getMerkleRoot(), r.getValidatedNodesList(),
                r.getFailedNodesList(), r.getProblemsList());
    }

    static ChecksumReport checksumReport(io.butterfly.worker.partition.ChecksumReport r) {
        ChecksumReport.Builder b = ChecksumReport.newBuilder().setNodeId(r.nodeId()).setEpoch(r.epoch())
                .setLayerRange(LayerRange.newBuilder().setStart(r.layerStart()).setEnd(r.layerEnd()))
                .setHasEmbedding(r.hasEmbedding()).setHasHead(r.hasHead());
        r.files().forEach(f -> b.addFiles(FileChecksum.newBuilder().setName(f.name()).setSha256(f.sha256())
                .setSizeBytes(f.sizeBytes())));
        return b.setWeightHash(r.weightHash()).setTimestampMs(r.timestampMs()).build();
    }

    /** A step's input tensor as received, checked (dtype, rank, length, hash) by the codec when read. */
    private record ReceivedTensor(Tensor tensor) implements EncodedInput {

        @Override
        public long[] tokenIds(String what) {
            return TensorCodec.toLongs(tensor, 1, what);
        }

        @Override
        public Hidden hiddenStates(String what) {
            ByteBuffer data = TensorCodec.verify(tensor, DType.FLOAT32, 2, what);
            return new Hidden(data, tensor.getShape(0), tensor.getShape(1));
        }
    }
}
