package io.butterfly.coordinator.gateway;

import io.grpc.ManagedChannel;

/**
 * Opens this coordinator's channels to discovery and the registry: api/grpc's bean, through the node's
 * {@code PeerDialer} (mutual TLS with its certificate), without the trace context the workers' channels carry.
 */
@FunctionalInterface
public interface ServiceChannels {

    ManagedChannel open(String host, int port);
}
