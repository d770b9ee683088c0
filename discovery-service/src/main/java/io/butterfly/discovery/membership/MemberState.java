package io.butterfly.discovery.membership;

/** How discovery knows a listed member. */
public enum MemberState {
    /** Admitted, the JOIN_ACK not yet seen: holds a slot but is not listed. */
    JOINING,
    /** Joined and acknowledged; kept fresh by heartbeats. */
    ACTIVE,
    /** A configured static seed that answered a reachability probe but has not joined. */
    REACHABLE,
    /** Registered in Consul with passing health checks (joined or not). */
    PASSING,
    /** Registered in Consul, some health check warning or critical. */
    UNHEALTHY
}
