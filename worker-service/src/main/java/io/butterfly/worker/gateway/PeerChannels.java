package io.butterfly.worker.gateway;

import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.common.grpc.OneWayStreams;
import io.butterfly.common.tls.ClusterTls;
import io.grpc.ManagedChannel;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One long-lived channel per peer address (next stage, coordinator, registry, discovery), shared by the gateways;
 * each speaks mutual TLS with this worker's certificate (plaintext when TLS is off).
 */
public class PeerChannels implements OneWayStreams.Channels {

    private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
    private final ClusterTls tls;

    public PeerChannels(ClusterTls tls) {
        this.tls = tls;
    }

    @Override
    public ManagedChannel get(String host, int port) {
        return channels.computeIfAbsent(host + ":" + port, k -> GrpcChannels.open(host, port, tls));
    }

    /** Closes every channel (on shutdown). */
    public void close() {
        channels.values().forEach(GrpcChannels::close);
    }
}
