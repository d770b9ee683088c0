package io.butterfly.common.grpc;

import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerBuilder;
import io.grpc.ServerCall;
import io.grpc.ServerCallExecutorSupplier;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.stream.Collectors;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/**
 * Runs the handlers of the named gRPC methods on the transport thread that read the message, instead of
 * handing each message to the server's executor: one thread wake-up less per message. Only for handlers
 * that return at once, never waiting for another call or a lock (a step outcome completes a future): a
 * handler that computes would hold up every other connection served by that transport thread. That includes what
 * the completed future runs inline: a dependent stage that may wait goes to its own executor (the coordinator's
 * {@code StepAuditor} once waited here for a lock held through blocking calls, and a worker whose heartbeats this
 * thread carried was declared lost).
 */
public final class TransportThreadMethods implements ServerCallExecutorSupplier {

    private static final Executor ON_TRANSPORT_THREAD = Runnable::run;

    private final Set<String> methods;

    private TransportThreadMethods(Set<String> fullMethodNames) {
        this.methods = Set.copyOf(fullMethodNames);
    }

    /** A server customizer (any transport) that runs these methods on the transport thread. */
    @SuppressWarnings({"rawtypes", "unchecked"}) // applies to whichever ServerBuilder the server factory uses
    public static ServerBuilderCustomizer customizer(MethodDescriptor<?, ?>... methods) {
        TransportThreadMethods supplier = new TransportThreadMethods(
                Arrays.stream(methods).map(MethodDescriptor::getFullMethodName).collect(Collectors.toSet()));
        return builder -> ((ServerBuilder<?>) builder).callExecutor(supplier);
    }

    @Override
    public <ReqT, RespT> Executor getExecutor(ServerCall<ReqT, RespT> call, Metadata headers) {
        // null: the server's executor, as for every other method.
        return methods.contains(call.getMethodDescriptor().getFullMethodName()) ? ON_TRANSPORT_THREAD : null;
    }
}
