package io.butterfly.discovery.admission;

/**
 * Decodes a message's payload into what the caller works with; the transport edge supplies it, so admission
 * never sees the wire format.
 */
@FunctionalInterface
public interface PayloadReader<T> {

    /** The decoded payload; throws {@link IllegalArgumentException} saying why when the bytes do not decode. */
    T read(byte[] payload);
}
