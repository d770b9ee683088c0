package io.butterfly.coordinator.gateway.worker;

import io.butterfly.common.grpc.GrpcChannels;
import io.grpc.ManagedChannel;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** One channel per worker address, shared by the calls made to it; closed with the gateway. */
final class WorkerChannels implements AutoCloseable {

    private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
    private final WorkerGateway.ChannelOpener opener;

    WorkerChannels(WorkerGateway.ChannelOpener opener) {
        this.opener = opener;
    }

    ManagedChannel channel(String nodeId, String host, int port) {
        return channels.computeIfAbsent(nodeId + "@" + host + ":" + port, k -> opener.open(host, port));
    }

    @Override
    public void close() {
        channels.values().forEach(GrpcChannels::close);
    }
}
