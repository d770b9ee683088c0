package io.butterfly.coordinator.api.grpc;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.CallerInterceptor;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.grpc.OneWayReceiver;
import io.butterfly.common.identity.Caller;
import io.butterfly.common.identity.NodeRole;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.control.Liveness;
import io.butterfly.coordinator.control.PrefixCacheReports;
import io.butterfly.coordinator.gateway.worker.WorkerGateway;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.coordinator.v1.HeartbeatAck;
import io.butterfly.proto.coordinator.v1.HeartbeatPing;
import io.butterfly.proto.coordinator.v1.PrefixCacheSummary;
import io.butterfly.proto.coordinator.v1.HeartbeatRequest;
import io.butterfly.proto.coordinator.v1.HeartbeatResponse;
import io.butterfly.proto.coordinator.v1.LoadReport;
import io.butterfly.proto.coordinator.v1.LoadReportAck;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.proto.worker.v1.StreamClosed;
import io.grpc.stub.StreamObserver;
import java.time.Clock;
import org.springframework.stereotype.Service;

/**
 * Workers' reports to the coordinator: load progress/completion, heartbeats and pipeline step outcomes. Each report
 * that speaks for a worker is taken only from that worker or a coordinator, as the caller's certificate says
 * ({@link Caller}); a forged heartbeat never reaches the failure detector.
 */
@Service
public class CoordinatorGrpcService extends CoordinatorServiceGrpc.CoordinatorServiceImplBase {

    private final ControlLog control;
    private final Liveness liveness;
    private final Clock clock;
    private final LoadTelemetry telemetry;
    private final WorkerGateway workers;

    private final PrefixCacheReports prefixCaches;

    public CoordinatorGrpcService(ControlLog control, Liveness liveness, Clock clock, LoadTelemetry telemetry,
                                  WorkerGateway workers, PrefixCacheReports prefixCaches) {
        this.prefixCaches = prefixCaches;
        this.workers = workers;
        this.control = control;
        this.liveness = liveness;
        this.clock = clock;
        this.telemetry = telemetry;
    }

    @Override
    public void reportLoad(LoadReport r, StreamObserver<LoadReportAck> response) {
        if (r.getNodeId().isBlank()) {
            throw new IllegalArgumentException("node_id is required");
        }
        CallerInterceptor.current().requireSpeaksFor(NodeRole.WORKER, r.getNodeId(), "load report");
        long now = clock.millis();
        ClusterCommand command = switch (r.getPhase()) {
            case READY -> new ClusterCommand.LoadCompleted(r.getNodeId(), r.getEpoch(), r.getPartitionChecksum(),
                    r.getKvCacheBudgetBytes(), now);
            case FAILED -> new ClusterCommand.LoadFailed(r.getNodeId(), r.getEpoch(), r.getErrorCode().name(),
                    r.getErrorMessage(), now);
            case DOWNLOADING, VALIDATING, LOADED, WARMING -> new ClusterCommand.LoadProgressed(r.getNodeId(), r.getEpoch(),
                    PartitionState.valueOf(r.getPhase().name()), r.getProgress(), r.getCurrentFile(), now);
            default -> throw new IllegalArgumentException("phase is required");
        };
        try {
            control.submit(command);
        } catch (IllegalTransitionException e) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION, e.getMessage());
        } catch (ControlLogUnavailableException e) {
            // no quorum or an election: the worker tries again (a refusal above it does not)
            throw new ButterflyException(ErrorCode.NO_QUORUM, ErrorKind.UNAVAILABLE, e.getMessage());
        }
        telemetry.record(r); // the leader's control loop, woken by the command, validates once the last stage is READY
        response.onNext(LoadReportAck.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void heartbeat(HeartbeatRequest request, StreamObserver<HeartbeatResponse> response) {
        CallerInterceptor.current().requireSpeaksFor(NodeRole.WORKER, request.getNodeId(), "heartbeat");
        liveness.heartbeat(request.getNodeId(), 0);
        response.onNext(HeartbeatResponse.newBuilder().setEpoch(control.state().epoch()).build());
        response.onCompleted();
    }

    /**
     * The long-lived heartbeat stream: every ping feeds the detector and is acked with the current
     * epoch. The stream's end (error or completion) is reported too, since a closed connection is the
     * fastest evidence of a crashed worker.
     */
    @Override
    public StreamObserver<HeartbeatPing> heartbeatStream(StreamObserver<HeartbeatAck> acks) {
        Caller caller = CallerInterceptor.current();
        return new StreamObserver<>() {
            private String nodeId;
            private long streamId;

            @Override
            public void onNext(HeartbeatPing ping) {
                if (ping.getNodeId().isBlank()) {
                    acks.onError(GrpcErrors.toStatus(invalid("node_id is required")));
                    return;
                }
                if (nodeId == null) {
                    try {
                        caller.requireSpeaksFor(NodeRole.WORKER, ping.getNodeId(), "heartbeat stream");
                    } catch (ButterflyException refused) {
                        acks.onError(GrpcErrors.toStatus(refused));
                        return;
                    }
                    nodeId = ping.getNodeId();
                    streamId = liveness.streamOpened(nodeId);
                } else if (!nodeId.equals(ping.getNodeId())) {
                    acks.onError(GrpcErrors.toStatus(invalid("one heartbeat stream per node: got '"
                            + ping.getNodeId() + "' on the stream of '" + nodeId + "'")));
                    return;
                }
                liveness.heartbeat(nodeId, ping.getLoadedEpoch());
                if (ping.hasPrefixCache()) {
                    PrefixCacheSummary p = ping.getPrefixCache();
                    prefixCaches.report(nodeId, new PrefixCacheReports.Report(p.getEnabled(), p.getBlocks(),
                            p.getBlockTokens(), p.getBytes(), p.getQueriedTokens(), p.getHitTokens(), p.getEvictions()));
                }
                acks.onNext(HeartbeatAck.newBuilder().setEpoch(control.state().epoch())
                        .setSequence(ping.getSequence()).build());
            }

            @Override
            public void onError(Throwable t) {
                closed();
            }

            @Override
            public void onCompleted() {
                closed();
                acks.onCompleted();
            }

            private void closed() {
                if (nodeId != null) {
                    liveness.streamClosed(nodeId, streamId);
                }
            }
        };
    }

    /**
     * Outcomes of the steps this replica started, one-way from the last stage or a failing one: only workers send
     * them, and each outcome only from a stage of its own step's pipeline.
     */
    @Override
    public StreamObserver<StepOutcome> stepOutcomes(StreamObserver<StreamClosed> closed) {
        Caller caller = CallerInterceptor.current();
        return OneWayReceiver.of(outcome -> workers.received(outcome, caller), closed);
    }

    private static ButterflyException invalid(String why) {
        return new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT, why);
    }
}
