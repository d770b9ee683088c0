package io.butterfly.common.manifest;

import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.WeightFile;
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
 * where {@code str} is a big-endian u32 byte length followed by UTF-8 bytes and integers are big-endian
 * two's complement. Everything except {@code signature} itself is covered, including the publisher key,
 * so a signature cannot be re-attributed to another key.
 */
public final class ManifestCanonicalForm {

    static final String DOMAIN = "butterfly-manifest-v1";

    private ManifestCanonicalForm() {
    }

    public static byte[] of(ModelManifest m) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256 + 128 * m.getFilesCount());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            str(out, DOMAIN);
            str(out, m.getModelId());
            str(out, m.getArchitecture());
            str(out, m.getVersion());
            out.writeInt(m.getNumLayers());
            out.writeLong(m.getParameterCount());
            out.writeInt(m.getHiddenSize());
            out.writeInt(m.getVocabSize());
            str(out, m.getDtype());
            str(out, m.getMerkleRoot());
            out.writeLong(m.getCreatedAtMs());
            str(out, m.getPublisherKey());
            out.writeInt(m.getFilesCount());
            for (WeightFile f : m.getFilesList()) {
                str(out, f.getName());
                out.writeLong(f.getSizeBytes());
                str(out, f.getChecksumAlgorithm());
                str(out, f.getChecksum());
                str(out, f.getKind().name());
                out.writeInt(f.getLayerStart());
                out.writeInt(f.getLayerEnd());
                str(out, f.getFormat());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e); // cannot happen with an in-memory stream
        }
        return bytes.toByteArray();
    }

    private static void str(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }
}
