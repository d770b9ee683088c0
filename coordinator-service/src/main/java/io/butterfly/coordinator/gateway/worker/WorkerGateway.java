package io.butterfly.coordinator.gateway.worker;

import io.butterfly.common.identity.Caller;
import io.butterfly.common.tensor.TensorCodec;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.inference.engine.StepInput;
import io.butterfly.common.sampling.GreedyChoice;
import io.butterfly.coordinator.inference.engine.StepResult;
import io.butterfly.coordinator.integrity.PartitionReport;
import io.butterfly.coordinator.reconcile.Assignment;
import io.butterfly.coordinator.reconcile.WorkerCallFailedException;
import io.butterfly.coordinator.reconcile.Workers;
import io.butterfly.common.hash.Xxh64;
import io.butterfly.proto.common.v1.DType;
import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.worker.v1.PhaseEnvelope;
import io.butterfly.proto.worker.v1.TensorMetadata;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.ChecksumReport;
import io.butterfly.proto.worker.v1.ChecksumRequest;
import io.butterfly.proto.worker.v1.DismissRequest;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.ExpertGroup;
import io.butterfly.proto.worker.v1.ForwardRequest;
import io.butterfly.proto.worker.v1.ReleaseRequest;
import io.butterfly.proto.worker.v1.SequenceSlice;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.proto.worker.v1.ValidationResult;
import io.butterfly.proto.worker.v1.ValidationStatus;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The workers over gRPC (WorkerService), the only code that builds their requests and reads their replies: for the
 * control plane, assignments, checksums, the validation verdict and dismissals; for inference, steps on one-way streams, their
 * outcomes (which arrive through api/grpc) and releases.
 */
public final class WorkerGateway implements Workers, Pipeline, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(WorkerGateway.class);

    /** Opens a channel to a worker (api/grpc's, with the tracing interceptor; tests open in-process ones). */
    public interface ChannelOpener {
        ManagedChannel open(String host, int port);
    }

    /**
     * @param nodeId               this coordinator replica, as workers reach it: steps' reply_to, assignments'
     *                             coordinator (with {@code advertiseHost} and {@code grpcPort})
     * @param registryHost         where assignments tell workers to fetch their weights (with {@code registryPort})
     * @param replicaGrpcEndpoints the other coordinator replicas ({@code id=host:port}), which workers heartbeat too
     * @param stepTimeoutSeconds   deadline of one pipeline step
     */
    public record Settings(String nodeId, String advertiseHost, int grpcPort, String registryHost, int registryPort,
                           List<String> replicaGrpcEndpoints, long stepTimeoutSeconds) {
    }

    /** The stages' addresses, built once per task. */
    private record StageRoute(Endpoint first, List<Endpoint> downstream, Set<String> stages) implements Route {
    }

    /** A micro-batch's steps are named after it: outcomes come back under (task id, step). */
    private static final String BATCH_PREFIX = "batch-";

    private final WorkerChannels channels;
    private final AssignmentAddresses addresses;
    private final PipelineSteps steps;
    private final Endpoint self;

    public WorkerGateway(Settings settings, ChannelOpener opener) {
        this.channels = new WorkerChannels(opener);
        this.addresses = new AssignmentAddresses(settings);
        this.steps = new PipelineSteps(channels, settings.stepTimeoutSeconds());
        this.self = self(settings);
    }

    static Endpoint self(Settings s) {
        return Endpoint.newBuilder().setNodeId(s.nodeId()).setHost(s.advertiseHost()).setGrpcPort(s.grpcPort()).build();
    }

    // --- the control plane's calls -------------------------------------------------------------------------------

    @Override
    public void assign(NodeInfo worker, Assignment a, Duration deadline) {
        AssignPartitionRequest request = addresses.address(AssignPartitionRequest.newBuilder())
                .setModelId(a.modelId())
                .setLayers(LayerRange.newBuilder().setStart(a.layerStart()).setEnd(a.layerEnd()))
                .setHasEmbedding(a.hasEmbedding())
                .setHasHead(a.hasHead())
                .setEpoch(a.epoch())
                .setTerm(a.term())
                .setStageKeptSinceEpoch(a.keptSinceEpoch())
                .addAllExpertGroups(a.expertGroups().stream().map(g -> ExpertGroup.newBuilder()
                        .setNode(Endpoint.newBuilder().setNodeId(g.node().nodeId()).setHost(g.node().host())
                                .setGrpcPort(g.node().grpcPort()))
                        .setFirstExpert(g.firstExpert()).setEndExpert(g.endExpert()).build()).toList())
                .setExpertGroup(a.expertGroup())
                .setStepsSinceEpoch(a.stepsSinceEpoch())
                .setAudit(a.audit())
                .build();
        call(() -> stub(worker, deadline).assignPartition(request));
    }

    @Override
    public void dismiss(NodeInfo worker, long epoch, long term, Duration deadline) {
        DismissRequest request = DismissRequest.newBuilder().setEpoch(epoch).setTerm(term).setReason("drained").build();
        call(() -> stub(worker, deadline).dismiss(request));
    }

    @Override
    public void reconnect(NodeInfo worker) {
        channel(worker).resetConnectBackoff();
    }

    @Override
    public PartitionReport checksums(NodeInfo worker, long epoch, Duration deadline) {
        ChecksumReport r = call(() -> stub(worker, deadline)
                .reportChecksums(ChecksumRequest.newBuilder().setEpoch(epoch).build()));
        return new PartitionReport(r.getNodeId(), r.getLayerRange().getStart(), r.getLayerRange().getEnd(),
                r.getWeightHash(), r.getFilesList().stream()
                .map(f -> new PartitionReport.FileDigest(f.getName(), f.getSha256())).toList());
    }

    @Override
    public void announceValidation(NodeInfo worker, WeightValidation v, Duration deadline) {
        ValidationResult result = ValidationResult.newBuilder().setEpoch(v.epoch())
                .setMerkleRoot(v.merkleRoot() == null ? "" : v.merkleRoot())
                .setPartitionRoot(v.partitionRoot() == null ? "" : v.partitionRoot())
                .setStatus(ValidationStatus.valueOf(v.status().name()))
                .setClusterReady(v.status() == WeightValidation.Status.VALID)
                .addAllValidatedNodes(v.validatedNodes()).addAllFailedNodes(v.failedNodes())
                .addAllProblems(v.problems()).build();
        call(() -> stub(worker, deadline).applyValidation(result));
    }

    private ManagedChannel channel(NodeInfo worker) {
        return channels.channel(worker.nodeId(), worker.host(), worker.grpcPort());
    }

    private WorkerServiceGrpc.WorkerServiceBlockingStub stub(NodeInfo worker, Duration deadline) {
        return WorkerServiceGrpc.newBlockingStub(channel(worker)).withDeadlineAfter(deadline.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    private static <T> T call(Supplier<T> rpc) {
        try {
            return rpc.get();
        } catch (StatusRuntimeException e) {
            throw new WorkerCallFailedException(e.getStatus().toString(), e);
        }
    }

    // --- the inference path -------------------------------------------------------------------------------------

    @Override
    public Route route(List<NodeInfo> stages) {
        List<Endpoint> endpoints = stages.stream()
                .map(n -> Endpoint.newBuilder().setNodeId(n.nodeId()).setHost(n.host()).setGrpcPort(n.grpcPort()).build())
                .toList();
        return new StageRoute(endpoints.get(0), endpoints.subList(1, endpoints.size()),
                stages.stream().map(NodeInfo::nodeId).collect(Collectors.toUnmodifiableSet()));
    }

    /**
     * A micro-batch's tokens go out as one tensor, each sequence a slice of it; the logits that come back are decoded
     * only when asked for.
     */
    @Override
    public CompletableFuture<StepResult> submit(Route route, StepInput in) {
        StageRoute r = (StageRoute) route;
        ForwardRequest.Builder request = ForwardRequest.newBuilder()
                .setTaskId(BATCH_PREFIX + in.batchId())
                .setStep((int) in.batchId())
                .setEpoch(in.epoch())
                .setInput(TensorCodec.int64(in.tokens(), in.tokens().length))
                // Token ids have no precision contract: the envelope only declares what they are.
                .setEnvelope(PhaseEnvelope.newBuilder().setInput(TensorMetadata.newBuilder().setDtype(DType.INT64)
                        .addShape(in.tokens().length).setLayout(io.butterfly.common.verify.TensorMetadata.ROW_MAJOR_LE)))
                .addAllDownstream(r.downstream())
                .setReplyTo(self);
        int at = 0;
        for (StepInput.Slice s : in.sequences()) {
            request.addSequences(SequenceSlice.newBuilder().setSequenceId(s.sequenceId()).setPosition(s.position())
                    .setNumTokens(s.numTokens()).setReservePositions(s.reservePositions())
                    .putAllTraceContext(s.traceContext()).setSkipLogits(s.skipLogits())
                    .setGreedy(s.greedyAlternatives() >= 0).setGreedyAlternatives(Math.max(0, s.greedyAlternatives()))
                    .setInputHash(Xxh64.ofLongs(in.tokens(), at, s.numTokens())).setLayerHashes(s.layerHashes()));
            at += s.numTokens();
        }
        return steps.submit(r.first(), r.stages(), request.build()).thenApply(ReceivedStep::new);
    }

    @Override
    public void abortThrough(String nodeId, String why) {
        steps.abortThrough(nodeId, why);
    }

    @Override
    public void release(Route route, List<String> taskIds) {
        StageRoute r = (StageRoute) route;
        try {
            WorkerServiceGrpc.newBlockingStub(channels.channel(r.first().getNodeId(), r.first().getHost(),
                            r.first().getGrpcPort()))
                    .withDeadlineAfter(10, TimeUnit.SECONDS)
                    .release(ReleaseRequest.newBuilder().addAllSequenceIds(taskIds).addAllDownstream(r.downstream())
                            .build());
        } catch (StatusRuntimeException e) {
            log.warn("releasing task(s) {} failed: {}", taskIds, e.getStatus());
        }
    }

    /** A step's outcome, sent one-way by the last stage or a failing one to this replica. */
    public void received(StepOutcome outcome, Caller sender) {
        steps.received(outcome, sender);
    }

    private record ReceivedStep(StepOutcome outcome) implements StepResult {

        @Override
        public float[] logits() {
            return TensorCodec.toFloats(outcome.getLogits(), 2, "logits");
        }

        @Override
        public List<Long> logitsShape() {
            return outcome.getLogits().getShapeList();
        }

        @Override
        public List<GreedyChoice> greedy() {
            return outcome.getGreedyList().stream().map(g -> new GreedyChoice(g.getTokenId(), g.getLogit(), g.getLogZ(),
                    g.getTopIdsList().stream().mapToInt(Integer::intValue).toArray(), floats(g.getTopLogitsList())))
                    .toList();
        }

        private static float[] floats(List<Float> values) {
            float[] out = new float[values.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = values.get(i);
            }
            return out;
        }

        @Override
        public List<StageTiming> timings() {
            return outcome.getTimingsList().stream()
                    .map(t -> new StageTiming(t.getNodeId(), t.getComputeNanos(), t.getWallNanos())).toList();
        }

        @Override
        public List<StageHashes> hashes() {
            return outcome.getHashesList().stream().map(h -> new StageHashes(h.getNodeId(),
                    h.getContract().getWeightFormat() + "/" + h.getContract().getComputeDtype() + "/"
                            + h.getContract().getActivations(),
                    h.getOutputHashesList().stream().mapToLong(Long::longValue).toArray(),
                    h.getLayersList().stream().map(l -> new StepResult.LayerHashes(l.getLayer(),
                            l.getOutputHashesList().stream().mapToLong(Long::longValue).toArray())).toList())).toList();
        }
    }

    @Override
    public void close() {
        steps.close();
        channels.close();
    }
}
