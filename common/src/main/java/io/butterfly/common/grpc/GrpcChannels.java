package io.butterfly.common.grpc;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.util.concurrent.TimeUnit;

/** Client channels between Butterfly services (loopback / cluster network, plaintext for now). */
public final class GrpcChannels {

    /** Large enough for a prefill's activations or a logits row; chunking covers weights. */
    public static final int MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

    private GrpcChannels() {
    }

    public static ManagedChannel open(String host, int port) {
        return Grpc.newChannelBuilderForAddress(host, port, InsecureChannelCredentials.create())
                .maxInboundMessageSize(MAX_MESSAGE_BYTES)
                .keepAliveTime(30, TimeUnit.SECONDS)
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
