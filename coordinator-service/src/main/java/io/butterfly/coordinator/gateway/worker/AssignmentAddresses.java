package io.butterfly.coordinator.gateway.worker;

import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.Endpoint;
import java.util.ArrayList;
import java.util.List;

/**
 * Where an assignment tells a worker to reach the cluster: the registry, this coordinator (the leader that
 * sends it), and every coordinator replica, so the worker heartbeats all of them and whichever replica
 * leads next already has the history its failure detector needs.
 */
final class AssignmentAddresses {

    private final Endpoint registry;
    private final Endpoint self;
    private final List<Endpoint> replicas;

    AssignmentAddresses(WorkerGateway.Settings settings) {
        this.registry = Endpoint.newBuilder().setNodeId("registry").setHost(settings.registryHost())
                .setGrpcPort(settings.registryPort()).build();
        this.self = WorkerGateway.self(settings);
        this.replicas = replicas(self, settings.replicaGrpcEndpoints());
    }

    /** Sets registry, coordinator and coordinator replicas on an assignment. */
    AssignPartitionRequest.Builder address(AssignPartitionRequest.Builder request) {
        return request
                .setRegistry(registry)
                .setCoordinator(self)
                .clearCoordinatorReplicas()
                .addAllCoordinatorReplicas(replicas);
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
