package io.butterfly.discovery.membership;

/**
 * Turns a member's capabilities into JSON and back, for backends that store members as text (Hazelcast entries,
 * Consul service metadata); the format is the transport edge's (the protocol's own JSON).
 */
public interface CapabilitiesCodec {

    /** JSON for the capabilities; {@code null} for none. */
    String toJson(Capabilities capabilities);

    /** The capabilities JSON written by {@link #toJson} holds; {@code null} for none or unreadable JSON. */
    Capabilities fromJson(String json);
}
