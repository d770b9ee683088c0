package io.butterfly.common.grpc;

import io.butterfly.common.tls.ClusterTls;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import java.util.List;

/**
 * Opens this node's client channels to the other services: the one place a service's outbound transport is chosen.
 * Every service takes the bean the TLS auto-configuration makes ({@link #overNetwork}: Netty, mutual TLS with this
 * node's certificate); a test that runs several services in one JVM gives each its own, over grpc-java's in-process
 * transport.
 */
@FunctionalInterface
public interface PeerDialer {

    /** A channel to {@code host:port} whose calls pass through {@code interceptors}. */
    ManagedChannel open(String host, int port, List<ClientInterceptor> interceptors);

    /** A channel with no interceptors of the caller's own. */
    default ManagedChannel open(String host, int port) {
        return open(host, port, List.of());
    }

    /** Channels over the network ({@link GrpcChannels}): mutual TLS with this node's certificate, plaintext when off. */
    static PeerDialer overNetwork(ClusterTls tls) {
        return (host, port, interceptors) -> GrpcChannels.open(host, port, tls, interceptors);
    }
}
