package io.butterfly.common.manifest;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The bytes a publisher signs for a manifest. Protobuf serialization is not canonical (field order,
 * unknown fields), so the signature covers this explicit encoding instead:
 * <pre>
 *   "butterfly-manifest-v1"                                    (domain separation)
 *   str model_id, str architecture, str version, i32 num_layers, i64 parameter_count,
 *   i32 hidden_size, i32 vocab_size, str dtype, str merkle_root, i64 created_at_ms, str publisher_key,
 *   i32 file count, then per file in manifest order:
 *     str name, i64 size_bytes, str checksum_algorithm, str checksum, str kind (enum name),
 *     i32 layer_start, i32 layer_end, str format
 * </pre>
 * where {@code str} is a big-endian u32 byte length followed by UTF-8 bytes (an absent string is empty) and
 * integers are big-endian two's complement (an absent layer is 0, as the message carries it). Everything except {@code signature} itself is covered, including the publisher key,
 * so a signature cannot be re-attributed to another key.
 */
public final class ManifestCanonicalForm {

    static final String DOMAIN = "butterfly-manifest-v1";

    private ManifestCanonicalForm() {
    }

    public static byte[] of(Manifest m) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256 + 128 * m.files().size());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            str(out, DOMAIN);
            str(out, m.modelId());
            str(out, m.architecture());
            str(out, m.version());
            out.writeInt(m.numLayers());
            out.writeLong(m.parameterCount());
            out.writeInt(m.hiddenSize());
            out.writeInt(m.vocabSize());
            str(out, m.dtype());
            str(out, m.merkleRoot());
            out.writeLong(m.createdAtMs());
            str(out, m.publisherKey());
            out.writeInt(m.files().size());
            for (ManifestFile f : m.files()) {
                str(out, f.name());
                out.writeLong(f.sizeBytes());
                str(out, f.checksumAlgorithm());
                str(out, f.checksum());
                str(out, f.kind().name());
                out.writeInt(f.layerStart() == null ? 0 : f.layerStart());
                out.writeInt(f.layerEnd() == null ? 0 : f.layerEnd());
                str(out, f.format());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e); // cannot happen with an in-memory stream
        }
        return bytes.toByteArray();
    }

    private static void str(DataOutputStream out, String s) throws IOException {
        byte[] b = s == null ? new byte[0] : s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }
}
