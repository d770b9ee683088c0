package io.butterfly.coordinator.raft;

import io.butterfly.coordinator.cluster.ClusterState;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * Snapshot encoding of the replicated {@link ClusterState}: a header line {@code sha256:<hex>} followed by
 * the state as JSON. The checksum is verified on load, so a replica never starts from a damaged snapshot.
 * JSON (Jackson, records) round-trips the state exactly, map order included.
 */
public final class ClusterStateCodec {

    private static final String HEADER = "sha256:";
    /**
     * A field added to the state after a snapshot was written reads as its zero value (as a protobuf field does), so a
     * replica installs a snapshot an earlier version wrote; the checksum, not a missing field, tells a damaged one.
     */
    private static final JsonMapper JSON = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES).build();

    private ClusterStateCodec() {
    }

    public static byte[] encode(ClusterState state) {
        byte[] body = JSON.writeValueAsBytes(state);
        byte[] header = (HEADER + HexFormat.of().formatHex(sha256(body)) + "\n").getBytes(StandardCharsets.US_ASCII);
        byte[] out = Arrays.copyOf(header, header.length + body.length);
        System.arraycopy(body, 0, out, header.length, body.length);
        return out;
    }

    /** Decodes a snapshot; a missing header, a checksum mismatch or unreadable JSON is an {@link IOException}. */
    public static ClusterState decode(byte[] snapshot) throws IOException {
        int newline = indexOf(snapshot, (byte) '\n');
        String header = newline < 0 ? "" : new String(snapshot, 0, newline, StandardCharsets.US_ASCII);
        if (!header.startsWith(HEADER)) {
            throw new IOException("control-state snapshot has no sha256 header");
        }
        byte[] body = Arrays.copyOfRange(snapshot, newline + 1, snapshot.length);
        String actual = HexFormat.of().formatHex(sha256(body));
        if (!actual.equals(header.substring(HEADER.length()))) {
            throw new IOException("control-state snapshot checksum mismatch: expected "
                    + header.substring(HEADER.length()) + ", computed " + actual);
        }
        try {
            return JSON.readValue(body, ClusterState.class);
        } catch (JacksonException e) {
            throw new IOException("control-state snapshot is not a valid ClusterState", e);
        }
    }

    private static int indexOf(byte[] bytes, byte b) {
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == b) {
                return i;
            }
        }
        return -1;
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is always available", e);
        }
    }
}
