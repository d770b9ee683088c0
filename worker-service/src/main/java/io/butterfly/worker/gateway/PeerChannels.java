package io.butterfly.worker.gateway;

import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.common.grpc.OneWayStreams;
import io.grpc.ManagedChannel;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** One long-lived channel per peer address (next stage, coordinator, registry, discovery), shared by the gateways. */
public class PeerChannels implements OneWayStreams.Channels {

    private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();

    @Override
    public ManagedChannel get(String host, int port) {
        return channels.computeIfAbsent(host + ":" + port, k -> GrpcChannels.open(host, port));
    }

    /** Closes every channel (on shutdown). */
    public void close() {
        channels.values().forEach(GrpcChannels::close);
    }
}
