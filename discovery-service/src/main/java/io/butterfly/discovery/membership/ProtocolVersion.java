package io.butterfly.discovery.membership;

/** A "major.minor" protocol version (docs/bootstrap-protocol.md §7.1: majors must match). */
public record ProtocolVersion(int major, int minor) {

    public static ProtocolVersion parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("protocol_version is required");
        }
        String[] parts = text.trim().split("\\.");
        try {
            if (parts.length < 1 || parts.length > 3) {
                throw new NumberFormatException();
            }
            int major = Integer.parseInt(parts[0]);
            int minor = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
            if (major < 0 || minor < 0) {
                throw new NumberFormatException();
            }
            return new ProtocolVersion(major, minor);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("protocol_version '" + text + "' is not major.minor");
        }
    }
}
