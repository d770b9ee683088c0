package io.butterfly.common.manifest;

import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.WeightFile;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Checks a manifest before anything uses it: signed by a trusted publisher key (else
 * {@code UNTRUSTED_PUBLISHER}), the Ed25519 signature valid over {@link ManifestCanonicalForm}
 * (else {@code INVALID_SIGNATURE}), and the Merkle root the signature covers matching the files'
 * checksums (else {@code MERKLE_ROOT_MISMATCH}). An empty trust list trusts nobody.
 */
public final class ManifestVerifier {

    private final Set<String> trustedKeys;

    public ManifestVerifier(List<String> trustedPublisherKeysHex) {
        this.trustedKeys = trustedPublisherKeysHex.stream()
                .map(k -> k.trim().toLowerCase(Locale.ROOT))
                .filter(k -> !k.isEmpty())
                .peek(k -> Ed25519.publicKey(Ed25519.fromHex(k))) // fail fast on a malformed configured key
                .collect(Collectors.toUnmodifiableSet());
    }

    /** Returns the manifest if it is authentic; throws a {@link ButterflyException} naming the problem otherwise. */
    public ModelManifest verify(ModelManifest m) {
        String key = m.getPublisherKey().toLowerCase(Locale.ROOT);
        Map<String, String> ctx = Map.of("model_id", m.getModelId(), "publisher_key", key);
        if (!trustedKeys.contains(key)) {
            throw new ButterflyException(ErrorCode.UNTRUSTED_PUBLISHER, ErrorKind.PERMISSION_DENIED,
                    "manifest of '" + m.getModelId() + "' is signed by untrusted publisher key '" + key + "' (trusted: "
                            + (trustedKeys.isEmpty() ? "none configured" : String.join(", ", trustedKeys)) + ")",
                    ctx, null);
        }
        byte[] signature;
        try {
            signature = Ed25519.fromHex(m.getSignature());
        } catch (IllegalArgumentException e) {
            signature = new byte[0];
        }
        if (signature.length != Ed25519.SIGNATURE_BYTES
                || !Ed25519.verify(Ed25519.fromHex(key), ManifestCanonicalForm.of(m), signature)) {
            throw new ButterflyException(ErrorCode.INVALID_SIGNATURE, ErrorKind.PERMISSION_DENIED,
                    "manifest of '" + m.getModelId() + "' has an invalid signature for publisher key '" + key + "'",
                    ctx, null);
        }
        // Signed is not enough to be safe to use: the id and the file names become paths on this node.
        if (!ModelIds.isValid(m.getModelId())) {
            throw new ButterflyException(ErrorCode.INVALID_MANIFEST, ErrorKind.INVALID_ARGUMENT,
                    "manifest names model id '" + m.getModelId() + "', which is not one path segment of letters, digits,"
                            + " '.', '_' or '-'", ctx, null);
        }
        java.util.Set<String> names = new java.util.HashSet<>();
        for (WeightFile f : m.getFilesList()) {
            if (!names.add(f.getName())) {
                throw invalidFiles(m, "lists file '" + f.getName() + "' twice", ctx);
            }
        }
        for (String name : names) {
            if (names.contains(name + ".part")) { // a download of one would write into the other
                throw invalidFiles(m, "lists both '" + name + "' and '" + name + ".part'", ctx);
            }
        }
        String root = MerkleTree.rootHex(m.getFilesList().stream().map(WeightFile::getChecksum).toList());
        if (!root.equals(m.getMerkleRoot())) {
            throw new ButterflyException(ErrorCode.MERKLE_ROOT_MISMATCH, ErrorKind.DATA_LOSS,
                    "manifest of '" + m.getModelId() + "' declares merkle root " + m.getMerkleRoot()
                            + " but its files hash to " + root, ctx, null);
        }
        return m;
    }

    /** {@link #verify}, and the manifest must be of the model that was asked for (a registry answering another). */
    public ModelManifest verifyFor(String modelId, ModelManifest m) {
        verify(m);
        if (!m.getModelId().equals(modelId)) {
            throw new ButterflyException(ErrorCode.INVALID_MANIFEST, ErrorKind.FAILED_PRECONDITION,
                    "the registry answered the manifest of '" + m.getModelId() + "' when asked for '" + modelId + "'");
        }
        return m;
    }

    private static ButterflyException invalidFiles(ModelManifest m, String problem, Map<String, String> ctx) {
        return new ButterflyException(ErrorCode.INVALID_MANIFEST, ErrorKind.INVALID_ARGUMENT,
                "manifest of '" + m.getModelId() + "' " + problem, ctx, null);
    }

    /** Signs a manifest (publisher side): sets the publisher key, then the signature over the canonical form. */
    public static ModelManifest sign(ModelManifest unsigned, io.butterfly.common.crypto.NodeIdentity publisher) {
        ModelManifest withKey = unsigned.toBuilder().clearSignature().setPublisherKey(publisher.publicKeyHex()).build();
        return withKey.toBuilder().setSignature(Ed25519.hex(publisher.sign(ManifestCanonicalForm.of(withKey)))).build();
    }
}
