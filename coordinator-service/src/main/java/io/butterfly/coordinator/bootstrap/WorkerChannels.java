package io.butterfly.coordinator.bootstrap;

import io.butterfly.common.grpc.GrpcChannels;
import io.grpc.ManagedChannel;
import jakarta.annotation.PreDestroy;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/** One channel per worker, shared by bootstrap and inference. */
@Component
public class WorkerChannels {

    private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
    private final int coordinatorGrpcPort;

    public WorkerChannels(@Value("${spring.grpc.server.port}") int coordinatorGrpcPort) {
        this.coordinatorGrpcPort = coordinatorGrpcPort;
    }

    public ManagedChannel channel(String nodeId, String host, int port) {
        return channels.computeIfAbsent(nodeId + "@" + host + ":" + port, k -> GrpcChannels.open(host, port));
    }

    public int coordinatorGrpcPort() {
        return coordinatorGrpcPort;
    }

    @PreDestroy
    void close() {
        channels.values().forEach(GrpcChannels::close);
    }
}
