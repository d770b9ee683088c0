package io.butterfly.coordinator.bootstrap;

import io.butterfly.coordinator.config.ControlRaftProperties;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.Endpoint;
import java.util.ArrayList;
import java.util.List;
import org.springframework.stereotype.Component;

/**
 * Where an assignment tells a worker to reach the cluster: the registry, this coordinator (the leader that
 * sends it), and every coordinator replica, so the worker heartbeats all of them and whichever replica
 * leads next already has the history its failure detector needs.
 */
@Component
public class AssignmentAddresses {

    private final CoordinatorProperties props;
    private final Endpoint self;
    private final List<Endpoint> replicas;

    public AssignmentAddresses(CoordinatorProperties props, ControlRaftProperties raft, WorkerChannels workers) {
        this.props = props;
        this.self = Endpoint.newBuilder().setNodeId(props.nodeId()).setHost(props.advertiseHost())
                .setGrpcPort(workers.coordinatorGrpcPort()).build();
        this.replicas = replicas(self, raft.replicaGrpcEndpoints());
    }

    /** Sets registry, coordinator and coordinator replicas on an assignment. */
    public AssignPartitionRequest.Builder address(AssignPartitionRequest.Builder request) {
        return request
                .setRegistry(Endpoint.newBuilder().setNodeId("registry").setHost(props.registryHost())
                        .setGrpcPort(props.registryPort()))
                .setCoordinator(self)
                .clearCoordinatorReplicas()
                .addAllCoordinatorReplicas(replicas);
    }

    public List<Endpoint> replicas() {
        return replicas;
    }

    /** This replica first, then the configured others ({@code id=host:port}; an entry naming this one is skipped). */
    static List<Endpoint> replicas(Endpoint self, List<String> configured) {
        List<Endpoint> out = new ArrayList<>();
        out.add(self);
        for (String entry : configured) {
            int eq = entry.indexOf('=');
            int colon = entry.lastIndexOf(':');
            if (eq <= 0 || colon <= eq + 1 || colon == entry.length() - 1) {
                throw new IllegalArgumentException("butterfly.coordinator.raft.replica-grpc-endpoints entry '" + entry
                        + "' is not id=host:port");
            }
            String id = entry.substring(0, eq).trim();
            int port;
            try {
                port = Integer.parseInt(entry.substring(colon + 1).trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("butterfly.coordinator.raft.replica-grpc-endpoints entry '" + entry
                        + "' has no numeric port", e);
            }
            if (!id.equals(self.getNodeId())) {
                out.add(Endpoint.newBuilder().setNodeId(id).setHost(entry.substring(eq + 1, colon).trim())
                        .setGrpcPort(port).build());
            }
        }
        return List.copyOf(out);
    }
}
