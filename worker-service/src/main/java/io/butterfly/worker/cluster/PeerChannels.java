package io.butterfly.worker.cluster;

import io.butterfly.common.grpc.GrpcChannels;
import io.grpc.ManagedChannel;
import jakarta.annotation.PreDestroy;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.stereotype.Component;

/** One long-lived channel per peer address (next stage, coordinator, registry, discovery). */
@Component
public class PeerChannels {

    private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();

    public ManagedChannel get(String host, int port) {
        return channels.computeIfAbsent(host + ":" + port, k -> GrpcChannels.open(host, port));
    }

    @PreDestroy
    void close() {
        channels.values().forEach(GrpcChannels::close);
    }
}
