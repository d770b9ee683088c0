package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.raft.ControlReplica;
import io.butterfly.coordinator.raft.RaftControlLog;
import io.butterfly.coordinator.raft.ReplicaSettings;
import java.io.IOException;
import java.util.List;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/** Starts this coordinator's replica of the control log (closed when the context closes) and commits through it. */
@Configuration
public class RaftConfiguration {

    @Bean(destroyMethod = "close")
    ControlReplica controlReplica(CoordinatorProperties coordinator, ControlRaftProperties raft, Environment env)
            throws IOException {
        return ControlReplica.start(settings(coordinator, raft, env.getProperty("spring.grpc.server.port", Integer.class, 9090)));
    }

    @Bean
    ControlLog controlLog(ControlReplica replica) {
        return new RaftControlLog(replica);
    }

    /** The system state, workers per state, epoch and Raft leadership as gauges. */
    @Bean
    ClusterMetrics clusterMetrics(ControlLog control) {
        return new ClusterMetrics(control);
    }

    static ReplicaSettings settings(CoordinatorProperties coordinator, ControlRaftProperties raft, int grpcPort) {
        String self = raft.peerId().isBlank() ? coordinator.nodeId() : raft.peerId();
        List<ReplicaSettings.Peer> peers = raft.peers().isEmpty()
                ? List.of(new ReplicaSettings.Peer(self, coordinator.advertiseHost(), grpcPort + raft.portShift()))
                : raft.peers().stream().map(ReplicaSettings.Peer::parse).toList();
        String group = raft.groupName().isBlank() ? coordinator.clusterName() : raft.groupName();
        return new ReplicaSettings(self, peers, group, coordinator.dataDir().resolve("raft"), raft.electionTimeoutMin(),
                raft.electionTimeoutMax(), raft.snapshotThreshold(), raft.requestTimeout(),
                raft.bindHost().isBlank() ? null : raft.bindHost(),
                new ReplicaSettings.LogRetention(raft.logSegmentSize().toBytes(), raft.logPreservedEntries()));
    }
}
