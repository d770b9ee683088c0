package io.butterfly.common.manifest;

import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.error.ErrorCode;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Checks a manifest before anything uses it: signed by a trusted publisher key (else
 * {@code UNTRUSTED_PUBLISHER}), the Ed25519 signature valid over {@link ManifestCanonicalForm}
 * (else {@code INVALID_SIGNATURE}), a model id and file names safe to use as paths, each file's checksum a SHA-256
 * (else {@code INVALID_MANIFEST}), and the Merkle root the signature covers matching the files' checksums (else
 * {@code MERKLE_ROOT_MISMATCH}). Nothing else escapes: whatever a registry answers is accepted or refused with one of
 * these codes. An empty trust list trusts nobody.
 */
public final class ManifestVerifier {

    private static final Pattern SHA256_HEX = Pattern.compile("[0-9a-fA-F]{64}");

    private final Set<String> trustedKeys;

    public ManifestVerifier(List<String> trustedPublisherKeysHex) {
        this.trustedKeys = trustedPublisherKeysHex.stream()
                .map(k -> k.trim().toLowerCase(Locale.ROOT))
                .filter(k -> !k.isEmpty())
                .peek(k -> Ed25519.publicKey(Ed25519.fromHex(k))) // fail fast on a malformed configured key
                .collect(Collectors.toUnmodifiableSet());
    }

    /** Returns the manifest if it is authentic; throws a {@link ButterflyException} naming the problem otherwise. */
    public Manifest verify(Manifest m) {
        String key = m.publisherKey() == null ? "" : m.publisherKey().toLowerCase(Locale.ROOT);
        Map<String, String> ctx = Map.of("model_id", m.modelId(), "publisher_key", key);
        if (!trustedKeys.contains(key)) {
            throw new ButterflyException(ErrorCode.UNTRUSTED_PUBLISHER, ErrorKind.PERMISSION_DENIED,
                    "manifest of '" + m.modelId() + "' is signed by untrusted publisher key '" + key + "' (trusted: "
                            + (trustedKeys.isEmpty() ? "none configured" : String.join(", ", trustedKeys)) + ")",
                    ctx, null);
        }
        byte[] signature;
        try {
            signature = m.signature() == null ? new byte[0] : Ed25519.fromHex(m.signature());
        } catch (IllegalArgumentException e) {
            signature = new byte[0];
        }
        if (signature.length != Ed25519.SIGNATURE_BYTES
                || !Ed25519.verify(Ed25519.fromHex(key), ManifestCanonicalForm.of(m), signature)) {
            throw new ButterflyException(ErrorCode.INVALID_SIGNATURE, ErrorKind.PERMISSION_DENIED,
                    "manifest of '" + m.modelId() + "' has an invalid signature for publisher key '" + key + "'",
                    ctx, null);
        }
        // Signed is not enough to be safe to use: the id and the file names become paths on this node.
        if (!ModelIds.isValid(m.modelId())) {
            throw new ButterflyException(ErrorCode.INVALID_MANIFEST, ErrorKind.INVALID_ARGUMENT,
                    "manifest names model id '" + m.modelId() + "', which is not one path segment of letters, digits,"
                            + " '.', '_' or '-'", ctx, null);
        }
        java.util.Set<String> names = new java.util.HashSet<>();
        for (ManifestFile f : m.files()) {
            if (!names.add(f.name())) {
                throw invalidFiles(m, "lists file '" + f.name() + "' twice", ctx);
            }
        }
        for (String name : names) {
            if (names.contains(name + ".part")) { // a download of one would write into the other
                throw invalidFiles(m, "lists both '" + name + "' and '" + name + ".part'", ctx);
            }
        }
        for (ManifestFile f : m.files()) {
            // The Merkle root and every download are checked against these digests: they must be SHA-256s.
            if (!"sha256".equals(f.checksumAlgorithm()) || f.checksum() == null || !SHA256_HEX.matcher(f.checksum()).matches()) {
                throw invalidFiles(m, "gives file '" + f.name() + "' the checksum " + f.checksumAlgorithm() + " '"
                        + f.checksum() + "', not a SHA-256 in hex", ctx);
            }
        }
        String root = MerkleTree.rootHex(m.files().stream().map(ManifestFile::checksum).toList());
        if (!root.equals(m.merkleRoot())) {
            throw new ButterflyException(ErrorCode.MERKLE_ROOT_MISMATCH, ErrorKind.DATA_LOSS,
                    "manifest of '" + m.modelId() + "' declares merkle root " + m.merkleRoot()
                            + " but its files hash to " + root, ctx, null);
        }
        return m;
    }

    /** {@link #verify}, and the manifest must be of the model that was asked for (a registry answering another). */
    public Manifest verifyFor(String modelId, Manifest m) {
        verify(m);
        if (!m.modelId().equals(modelId)) {
            throw new ButterflyException(ErrorCode.INVALID_MANIFEST, ErrorKind.FAILED_PRECONDITION,
                    "the registry answered the manifest of '" + m.modelId() + "' when asked for '" + modelId + "'");
        }
        return m;
    }

    private static ButterflyException invalidFiles(Manifest m, String problem, Map<String, String> ctx) {
        return new ButterflyException(ErrorCode.INVALID_MANIFEST, ErrorKind.INVALID_ARGUMENT,
                "manifest of '" + m.modelId() + "' " + problem, ctx, null);
    }

    /** Signs a manifest (publisher side): sets the publisher key, then the signature over the canonical form. */
    public static Manifest sign(Manifest unsigned, io.butterfly.common.crypto.NodeIdentity publisher) {
        Manifest withKey = unsigned.signed(publisher.publicKeyHex(), null);
        return withKey.signed(publisher.publicKeyHex(), Ed25519.hex(publisher.sign(ManifestCanonicalForm.of(withKey))));
    }
}
