package io.butterfly.discovery.membership;

/**
 * Turns a member's capability payload into JSON and back, for backends that store members as text
 * (Hazelcast entries, Consul service metadata). The payload's type belongs to the transport edge.
 */
public interface CapabilitiesCodec {

    /** JSON for the payload; {@code null} for none. */
    String toJson(Object capabilities);

    /** The payload for JSON written by {@link #toJson}; {@code null} for none. */
    Object fromJson(String json);
}
