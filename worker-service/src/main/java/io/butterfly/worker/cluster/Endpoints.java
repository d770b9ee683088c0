package io.butterfly.worker.cluster;

import io.butterfly.proto.worker.v1.Endpoint;

/**
 * Checks the peer addresses a message names before anything dials them: a channel to a blank host or an
 * out-of-range port fails deep inside gRPC's channel builder, far from the message that carried it.
 */
public final class Endpoints {

    private Endpoints() {
    }

    /**
     * @param field the message field, named in the error (e.g. {@code reply_to}, {@code downstream[1]})
     * @throws IllegalArgumentException naming the field if the host is blank or holds whitespace, or the port
     *                                  is not 1..65535
     */
    public static Endpoint requireValid(Endpoint endpoint, String field) {
        String problem = problem(endpoint, field);
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        return endpoint;
    }

    /** Why {@code endpoint} cannot be dialled, naming the field, or null if it can. */
    public static String problem(Endpoint endpoint, String field) {
        String host = endpoint.getHost();
        if (host.isBlank() || host.chars().anyMatch(Character::isWhitespace)) {
            return field + ".host must be a host name or address, got '" + host + "'";
        }
        int port = endpoint.getGrpcPort();
        if (port < 1 || port > 65535) {
            return field + ".grpc_port must be 1..65535, got " + port;
        }
        return null;
    }
}
