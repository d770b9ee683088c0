package io.butterfly.common.grpc;

import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor.MethodType;
import io.micrometer.core.instrument.binder.grpc.GrpcClientObservationContext;
import io.micrometer.core.instrument.binder.grpc.GrpcServerObservationContext;
import io.micrometer.core.instrument.binder.grpc.ObservationGrpcClientInterceptor;
import io.micrometer.observation.ObservationPredicate;
import io.micrometer.observation.ObservationRegistry;
import java.util.List;
import java.util.Set;

/**
 * Which gRPC calls the services observe (metrics and spans, through Micrometer's gRPC observation interceptors): all
 * but the long-lived streams. A client-streaming or bidirectional call here is a Steps, StepOutcomes or heartbeat
 * stream, open as long as the process and carrying many requests' messages: as one span it would last hours and
 * nest every request's steps under whichever request opened it. Steps carry their request's trace context in the
 * message instead, one per sequence. Nor the per-layer calls of a step (a head shard's or an expert group's partial,
 * WorkerService.Heads and Experts): two a layer and shard, each a fraction of a millisecond of the step whose span
 * covers them; a span and a timer each added a tenth of a millisecond or more to every one, on the step's critical
 * path (docs/sharding.md).
 */
public final class GrpcTracing {

    /** The per-layer calls of a step, by full method name. */
    static final Set<String> PER_LAYER = Set.of(WorkerServiceGrpc.getHeadsMethod().getFullMethodName(),
            WorkerServiceGrpc.getExpertsMethod().getFullMethodName());

    /** Observes unary and server-streaming calls only, on both sides, and not the per-layer calls of a step. */
    public static final ObservationPredicate SKIP_LONG_LIVED_STREAMS = (name, context) -> {
        if (context instanceof GrpcServerObservationContext server) {
            return !longLived(server.getMethodType()) && !PER_LAYER.contains(server.getFullMethodName());
        }
        if (context instanceof GrpcClientObservationContext client) {
            return !longLived(client.getMethodType()) && !PER_LAYER.contains(client.getFullMethodName());
        }
        return true;
    };

    private GrpcTracing() {
    }

    /**
     * What a service's channels intercept calls with ({@link GrpcChannels#open(String, int, ClusterTls, List)}): a call made
     * within a trace carries its context in the call's metadata, and the callee's server span continues it.
     */
    public static List<ClientInterceptor> clientInterceptors(ObservationRegistry registry) {
        return List.of(new ObservationGrpcClientInterceptor(registry));
    }

    private static boolean longLived(MethodType type) {
        return type == MethodType.CLIENT_STREAMING || type == MethodType.BIDI_STREAMING;
    }
}
