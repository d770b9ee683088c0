package io.butterfly.worker.cluster;

/**
 * Where another node of the cluster is reached: its id, and the host and gRPC port to dial (a coordinator replica,
 * the registry, the next pipeline stage).
 */
public record Endpoint(String nodeId, String host, int grpcPort) {

    /** {@code host:port}, the key of the node's channel. */
    public String address() {
        return host + ":" + grpcPort;
    }

    /**
     * Checks the address before anything dials it: a channel to a blank host or an out-of-range port fails deep
     * inside gRPC's channel builder, far from the message that carried it.
     *
     * @param field the message field, named in the error (e.g. {@code reply_to}, {@code downstream[1]})
     * @throws IllegalArgumentException naming the field if the host is blank or holds whitespace, or the port
     *                                  is not 1..65535
     */
    public Endpoint requireValid(String field) {
        String problem = problem(field);
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        return this;
    }

    /** Why this endpoint cannot be dialled, naming the field, or null if it can. */
    public String problem(String field) {
        if (host.isBlank() || host.chars().anyMatch(Character::isWhitespace)) {
            return field + ".host must be a host name or address, got '" + host + "'";
        }
        if (grpcPort < 1 || grpcPort > 65535) {
            return field + ".grpc_port must be 1..65535, got " + grpcPort;
        }
        return null;
    }
}
