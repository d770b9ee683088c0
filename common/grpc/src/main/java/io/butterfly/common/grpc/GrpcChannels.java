package io.butterfly.common.grpc;

import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Client channels between Butterfly services (loopback / cluster network, plaintext for now). */
public final class GrpcChannels {

    /** Large enough for a prefill's activations or a logits row; chunking covers weights. */
    public static final int MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

    /**
     * Initial HTTP/2 flow-control window of a client channel (BDP auto-tuning still adjusts it). With
     * gRPC's 1 MiB default a 1 MiB weight chunk fills the window, so the registry waited for each chunk to be
     * consumed before sending the next: sender and receiver never overlapped, and one file stream ran at a
     * third of the speed it reaches with a few chunks in flight.
     */
    public static final int INITIAL_FLOW_CONTROL_WINDOW = 8 * 1024 * 1024;

    private GrpcChannels() {
    }

    public static ManagedChannel open(String host, int port) {
        return open(host, port, List.of());
    }

    /**
     * A channel whose calls pass through {@code interceptors} (the service's tracing interceptor: each call carries
     * the caller's trace context in its metadata).
     */
    public static ManagedChannel open(String host, int port, List<ClientInterceptor> interceptors) {
        return NettyChannelBuilder.forAddress(host, port)
                .usePlaintext()
                .initialFlowControlWindow(INITIAL_FLOW_CONTROL_WINDOW)
                .maxInboundMessageSize(MAX_MESSAGE_BYTES)
                .keepAliveTime(30, TimeUnit.SECONDS)
                .intercept(interceptors)
                .build();
    }

    public static void close(ManagedChannel channel) {
        channel.shutdown();
        try {
            if (!channel.awaitTermination(2, TimeUnit.SECONDS)) {
                channel.shutdownNow();
            }
        } catch (InterruptedException e) {
            channel.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}
