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

    /** Opens a channel to a peer (api/grpc's, with the tracing interceptor). */
    public interface Opener {
        ManagedChannel open(String host, int port);
    }

    private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
    private final Opener opener;

    public PeerChannels(Opener opener) {
        this.opener = opener;
    }

    /** Channels without tracing, as tests use them. */
    public PeerChannels(ClusterTls tls) {
        this((host, port) -> GrpcChannels.open(host, port, tls));
    }

    @Override
    public ManagedChannel get(String host, int port) {
        return channels.computeIfAbsent(host + ":" + port, k -> opener.open(host, port));
    }

    /** Closes every channel (on shutdown). */
    public void close() {
        channels.values().forEach(GrpcChannels::close);
    }
}
