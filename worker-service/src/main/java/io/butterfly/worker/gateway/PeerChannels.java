package io.butterfly.worker.gateway;

import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.common.grpc.OneWayStreams;
import io.grpc.ManagedChannel;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** One long-lived channel per peer address (next stage, coordinator, registry, discovery), shared by the gateways. */
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

    /** Plain channels, as tests use them. */
    public PeerChannels() {
        this(GrpcChannels::open);
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
