package io.butterfly.common.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.grpc.MethodDescriptor;
import io.micrometer.core.instrument.binder.grpc.GrpcClientObservationContext;
import io.micrometer.core.instrument.binder.grpc.GrpcServerObservationContext;
import io.micrometer.observation.Observation;
import org.junit.jupiter.api.Test;

/** Which calls are observed: unary calls, but neither the long-lived streams nor a step's per-layer calls. */
class GrpcTracingTest {

    @Test
    void aStepsPerLayerCallsAreNotObservedOnEitherSide() {
        for (MethodDescriptor<?, ?> perLayer : new MethodDescriptor<?, ?>[]{WorkerServiceGrpc.getHeadsMethod(),
                WorkerServiceGrpc.getExpertsMethod()}) {
            assertThat(observed(server(perLayer))).as(perLayer.getFullMethodName() + " served").isFalse();
            assertThat(observed(client(perLayer))).as(perLayer.getFullMethodName() + " called").isFalse();
        }
    }

    @Test
    void otherUnaryCallsAreObservedAndLongLivedStreamsAreNot() {
        MethodDescriptor<?, ?> unary = WorkerServiceGrpc.getReleaseMethod();
        assertThat(unary.getType()).isEqualTo(MethodDescriptor.MethodType.UNARY);
        assertThat(observed(server(unary))).isTrue();
        assertThat(observed(client(unary))).isTrue();
        MethodDescriptor<?, ?> stream = WorkerServiceGrpc.getStepsMethod();
        assertThat(stream.getType()).isIn(MethodDescriptor.MethodType.BIDI_STREAMING,
                MethodDescriptor.MethodType.CLIENT_STREAMING);
        assertThat(observed(server(stream))).isFalse();
        assertThat(observed(client(stream))).isFalse();
    }

    private static boolean observed(Observation.Context context) {
        return GrpcTracing.SKIP_LONG_LIVED_STREAMS.test("grpc", context);
    }

    private static GrpcServerObservationContext server(MethodDescriptor<?, ?> method) {
        GrpcServerObservationContext c = new GrpcServerObservationContext((carrier, key) -> null);
        c.setFullMethodName(method.getFullMethodName());
        c.setMethodType(method.getType());
        return c;
    }

    private static GrpcClientObservationContext client(MethodDescriptor<?, ?> method) {
        GrpcClientObservationContext c = new GrpcClientObservationContext((carrier, key, value) -> { });
        c.setFullMethodName(method.getFullMethodName());
        c.setMethodType(method.getType());
        return c;
    }
}
