package io.butterfly.testsupport;

import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;

/**
 * gRPC services served in this JVM without a socket (grpc-java's in-process transport), and a channel to them:
 * real stubs, real serialization, real status codes, no ports.
 */
public final class InProcessGrpc implements AutoCloseable {

    private final Server server;
    private final ManagedChannel channel;

    private InProcessGrpc(Server server, ManagedChannel channel) {
        this.server = server;
        this.channel = channel;
    }

    /** Serves {@code services} (plain or intercepted) under a fresh name. */
    public static InProcessGrpc serving(Object... services) {
        String name = InProcessServerBuilder.generateName();
        InProcessServerBuilder builder = InProcessServerBuilder.forName(name);
        for (Object s : services) {
            if (s instanceof BindableService b) {
                builder.addService(b);
            } else if (s instanceof ServerServiceDefinition d) {
                builder.addService(d);
            } else {
                throw new IllegalArgumentException("not a gRPC service: " + s);
            }
        }
        try {
            return new InProcessGrpc(builder.build().start(), InProcessChannelBuilder.forName(name).build());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public ManagedChannel channel() {
        return channel;
    }

    @Override
    public void close() {
        channel.shutdownNow();
        server.shutdownNow();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
