package io.butterfly.cli.cluster;

import io.butterfly.cli.command.CommandFailedException;
import java.util.ArrayList;
import java.util.List;

/**
 * The ports of a cluster on this machine. {@code BUTTERFLY_PORT_OFFSET} shifts every port, so that two checkouts
 * can run clusters side by side; {@code BUTTERFLY_COORDINATOR_PORT} moves the coordinator's HTTP port alone.
 *
 * <p>Coordinator replica 0 keeps 8080/9080; replicas 1 and 2 take 8083/9083 and 8084/9084. Their Raft ports
 * (control log) are 9070, 9071, 9072: clear of the workers' gRPC ports 9090.. (not the default gRPC port + 20,
 * which a tenth worker's gRPC port would take).
 *
 * @param offset          added to every port
 * @param coordinatorHttp the HTTP port of coordinator replica 0
 */
public record PortLayout(int offset, int coordinatorHttp) {

    /** A port and what listens on it. */
    public record Use(int port, String owner) {
    }

    public static PortLayout fromEnvironment() {
        int offset = integer("BUTTERFLY_PORT_OFFSET", System.getenv("BUTTERFLY_PORT_OFFSET"), 0);
        return new PortLayout(offset, integer("BUTTERFLY_COORDINATOR_PORT", System.getenv("BUTTERFLY_COORDINATOR_PORT"),
                8080 + offset));
    }

    /** Every port shifted by {@code offset}, the coordinator's too. */
    public static PortLayout withOffset(int offset) {
        return new PortLayout(offset, 8080 + offset);
    }

    public String coordinatorUrl() {
        return "http://127.0.0.1:" + coordinatorHttp;
    }

    public int coordinatorHttp(int replica) {
        return replica == 0 ? coordinatorHttp : 8082 + replica + offset;
    }

    public int coordinatorGrpc(int replica) {
        return replica == 0 ? 9080 + offset : 9082 + replica + offset;
    }

    public int raft(int replica) {
        return 9070 + offset + replica;
    }

    public int discoveryHttp() {
        return 8082 + offset;
    }

    public int discoveryGrpc() {
        return 9082 + offset;
    }

    /** Discovery's embedded Hazelcast member (loopback only). */
    public int hazelcast() {
        return 5701 + offset;
    }

    public int registryHttp() {
        return 8081 + offset;
    }

    public int registryGrpc() {
        return 9081 + offset;
    }

    public int workerHttp(int worker) {
        return 8090 + offset + worker;
    }

    public int workerGrpc(int worker) {
        return 9090 + offset + worker;
    }

    /** Every port a cluster of {@code workers} workers and {@code coordinators} coordinators listens on. */
    public List<Use> ports(int workers, int coordinators) {
        List<Use> ports = new ArrayList<>(List.of(new Use(discoveryHttp(), "discovery"), new Use(discoveryGrpc(), "discovery"),
                new Use(hazelcast(), "discovery's Hazelcast"), new Use(registryHttp(), "registry"),
                new Use(registryGrpc(), "registry")));
        for (int i = 0; i < workers; i++) {
            ports.add(new Use(workerHttp(i), "worker-" + i));
            ports.add(new Use(workerGrpc(i), "worker-" + i));
        }
        for (int c = 0; c < coordinators; c++) {
            ports.add(new Use(coordinatorHttp(c), "coordinator-" + c));
            ports.add(new Use(coordinatorGrpc(c), "coordinator-" + c));
            ports.add(new Use(raft(c), "coordinator-" + c + "'s Raft"));
        }
        return ports;
    }

    private static int integer(String name, String value, int fallback) {
        if (value == null || value.isEmpty()) {
            return fallback;
        }
        try {
            return Integer.parseInt(value.strip());
        } catch (NumberFormatException e) {
            throw new CommandFailedException(name + " must be an integer, not '" + value + "'");
        }
    }
}
