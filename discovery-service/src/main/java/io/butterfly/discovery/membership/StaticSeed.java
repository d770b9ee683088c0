package io.butterfly.discovery.membership;

/**
 * One configured seed of the {@code static} backend (docs/initialization-and-bootstrap.md §3.1).
 *
 * @param nodeId   the node id it is known by
 * @param role     "worker" | "coordinator" | "registry" | "discovery"
 * @param host     address it is reached at
 * @param grpcPort gRPC port (probed for reachability)
 */
public record StaticSeed(String nodeId, String role, String host, int grpcPort) {

    /**
     * Parses {@code [role/]node-id=host:grpc-port}, e.g. {@code worker-0=10.0.1.10:9090} or
     * {@code coordinator/coordinator-0=10.0.1.2:9080}; the role defaults to worker.
     */
    public static StaticSeed parse(String spec) {
        String s = spec.trim();
        int eq = s.indexOf('=');
        int colon = s.lastIndexOf(':');
        if (eq < 1 || colon < eq + 2 || colon == s.length() - 1) {
            throw new IllegalArgumentException("static member '" + spec + "' is not [role/]node-id=host:grpc-port");
        }
        String name = s.substring(0, eq);
        int slash = name.indexOf('/');
        String role = slash < 0 ? "worker" : name.substring(0, slash);
        String nodeId = name.substring(slash + 1);
        int port;
        try {
            port = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("static member '" + spec + "' has no numeric grpc port", e);
        }
        return new StaticSeed(nodeId, role, s.substring(eq + 1, colon), port);
    }

    public StaticSeed {
        if (nodeId == null || nodeId.isBlank() || host == null || host.isBlank() || grpcPort < 1 || grpcPort > 65535) {
            throw new IllegalArgumentException("a static seed needs node-id, host and a grpc-port in 1..65535: "
                    + nodeId + "=" + host + ":" + grpcPort);
        }
    }
}
