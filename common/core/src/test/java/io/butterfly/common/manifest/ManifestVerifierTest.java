package io.butterfly.common.manifest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.hash.MerkleTree;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ManifestVerifierTest {

    private final NodeIdentity publisher = NodeIdentity.ephemeral();
    private final ManifestVerifier verifier = new ManifestVerifier(List.of(publisher.publicKeyHex()));

    private static final ManifestFile CONFIG = new ManifestFile("config.json", 10, "sha256", "aa".repeat(32),
            FileKind.CONFIG, null, null, "json");
    private static final ManifestFile LAYER = new ManifestFile("layer_000.safetensors", 1000, "sha256", "bb".repeat(32),
            FileKind.LAYER, 0, 1, "safetensors");

    private static Manifest unsigned() {
        return manifest("m", 1, List.of(CONFIG, LAYER), rootOf(List.of(CONFIG, LAYER)));
    }

    private static Manifest manifest(String modelId, int numLayers, List<ManifestFile> files, String merkleRoot) {
        return new Manifest(modelId, "llama", "v1", numLayers, 1234, 8, 16, "F32", files, merkleRoot, 42, null, null);
    }

    private static String rootOf(List<ManifestFile> files) {
        return MerkleTree.rootHex(files.stream().map(ManifestFile::checksum).toList());
    }

    /** {@code m} with its second file replaced and everything else, signature included, kept. */
    private static Manifest withLayer(Manifest m, ManifestFile layer) {
        return new Manifest(m.modelId(), m.architecture(), m.version(), m.numLayers(), m.parameterCount(),
                m.hiddenSize(), m.vocabSize(), m.dtype(), List.of(m.files().get(0), layer), m.merkleRoot(),
                m.createdAtMs(), m.publisherKey(), m.signature());
    }

    @Test
    void acceptsAManifestSignedByATrustedPublisher() {
        Manifest signed = ManifestVerifier.sign(unsigned(), publisher);
        assertThat(signed.publisherKey()).isEqualTo(publisher.publicKeyHex());
        assertThat(verifier.verify(signed)).isSameAs(signed);
    }

    @Test
    void refusesAManifestSignedByAnUntrustedKey() {
        Manifest signed = ManifestVerifier.sign(unsigned(), NodeIdentity.ephemeral());
        assertThatThrownBy(() -> verifier.verify(signed)).isInstanceOfSatisfying(ButterflyException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.UNTRUSTED_PUBLISHER));
        assertThatThrownBy(() -> new ManifestVerifier(List.of()).verify(ManifestVerifier.sign(unsigned(), publisher)))
                .isInstanceOfSatisfying(ButterflyException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.UNTRUSTED_PUBLISHER));
    }

    @Test
    void refusesAForgedSignatureAndAnyChangeAfterSigning() {
        Manifest signed = ManifestVerifier.sign(unsigned(), publisher);
        // Forged: a trusted key claimed, but the signature is made by another key.
        NodeIdentity forger = NodeIdentity.ephemeral();
        Manifest claimed = signed.signed(signed.publisherKey(), null);
        Manifest forged = claimed.signed(claimed.publisherKey(), Ed25519.hex(forger.sign(ManifestCanonicalForm.of(claimed))));
        assertInvalidSignature(forged);
        assertInvalidSignature(signed.signed(signed.publisherKey(), "zz"));
        assertInvalidSignature(claimed);
        // Any covered field changed after signing (seeded random picks): checksum, size, layer range, root.
        Random rnd = new Random(7);
        for (int i = 0; i < 20; i++) {
            ManifestFile f = signed.files().get(1);
            Manifest t = switch (rnd.nextInt(5)) {
                case 0 -> withLayer(signed, new ManifestFile(f.name(), f.sizeBytes(), f.checksumAlgorithm(),
                        "cc".repeat(32), f.kind(), f.layerStart(), f.layerEnd(), f.format()));
                case 1 -> withLayer(signed, new ManifestFile(f.name(), f.sizeBytes() + 1 + rnd.nextInt(100),
                        f.checksumAlgorithm(), f.checksum(), f.kind(), f.layerStart(), f.layerEnd(), f.format()));
                case 2 -> withLayer(signed, new ManifestFile(f.name(), f.sizeBytes(), f.checksumAlgorithm(),
                        f.checksum(), f.kind(), f.layerStart(), 2 + rnd.nextInt(5), f.format()));
                case 3 -> manifest(signed.modelId(), 2 + rnd.nextInt(5), signed.files(), signed.merkleRoot())
                        .signed(signed.publisherKey(), signed.signature());
                default -> manifest(signed.modelId(), signed.numLayers(), signed.files(), "dd".repeat(32))
                        .signed(signed.publisherKey(), signed.signature());
            };
            assertInvalidSignature(t);
        }
    }

    @Test
    void refusesASignedManifestWhoseMerkleRootDoesNotBindItsFiles() {
        Manifest lying = manifest("m", 1, unsigned().files(), "ee".repeat(32));
        assertThatThrownBy(() -> verifier.verify(ManifestVerifier.sign(lying, publisher)))
                .isInstanceOfSatisfying(ButterflyException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.MERKLE_ROOT_MISMATCH));
    }

    @Test
    void refusesASignedManifestWhoseModelIdIsNotOnePathSegment() {
        for (String id : new String[]{"../../etc", "a/b", "/abs", "..", ".hidden", ""}) {
            Manifest m = manifest(id, 1, unsigned().files(), unsigned().merkleRoot());
            assertThatThrownBy(() -> verifier.verify(ManifestVerifier.sign(m, publisher))).as(id)
                    .isInstanceOfSatisfying(ButterflyException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                        assertThat(e.getMessage()).contains("model id '" + id + "'");
                    });
        }
    }

    @Test
    void refusesASignedManifestListingAFileTwiceOrBesideItsPartName() {
        ManifestFile part = new ManifestFile(LAYER.name() + ".part", LAYER.sizeBytes(), LAYER.checksumAlgorithm(),
                LAYER.checksum(), LAYER.kind(), LAYER.layerStart(), LAYER.layerEnd(), LAYER.format());
        for (ManifestFile extra : new ManifestFile[]{LAYER, part}) {
            List<ManifestFile> files = new ArrayList<>(unsigned().files());
            files.add(extra);
            Manifest m = manifest("m", 1, files, rootOf(files));
            assertThatThrownBy(() -> verifier.verify(ManifestVerifier.sign(m, publisher))).as(extra.name())
                    .isInstanceOfSatisfying(ButterflyException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                        assertThat(e.getMessage()).contains(LAYER.name());
                    });
        }
    }

    /** Found by fuzzing: the Merkle tree's NumberFormatException escaped for a signed checksum that is not hex. */
    @Test
    void refusesASignedManifestWhoseChecksumIsNotASha256() {
        for (String[] checksum : new String[][]{{"sha256", "zz".repeat(32)}, {"sha256", "aa"}, {"md5", "aa".repeat(32)}}) {
            ManifestFile odd = new ManifestFile(LAYER.name(), LAYER.sizeBytes(), checksum[0], checksum[1], LAYER.kind(),
                    LAYER.layerStart(), LAYER.layerEnd(), LAYER.format());
            Manifest m = manifest("m", 1, List.of(CONFIG, odd), rootOf(List.of(CONFIG)));
            assertThatThrownBy(() -> verifier.verify(ManifestVerifier.sign(m, publisher))).as(checksum[1])
                    .isInstanceOfSatisfying(ButterflyException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                        assertThat(e.getMessage()).contains(LAYER.name());
                    });
        }
    }

    @Test
    void theSignatureCoversAnAbsentLayerRangeAsZeroAsTheMessageCarriesIt() {
        ManifestFile zeros = new ManifestFile(CONFIG.name(), CONFIG.sizeBytes(), CONFIG.checksumAlgorithm(),
                CONFIG.checksum(), CONFIG.kind(), 0, 0, CONFIG.format());
        Manifest absent = manifest("m", 1, List.of(CONFIG, LAYER), rootOf(List.of(CONFIG, LAYER)));
        Manifest present = manifest("m", 1, List.of(zeros, LAYER), rootOf(List.of(zeros, LAYER)));
        assertThat(ManifestCanonicalForm.of(absent)).isEqualTo(ManifestCanonicalForm.of(present));
    }

    private void assertInvalidSignature(Manifest m) {
        assertThatThrownBy(() -> verifier.verify(m)).isInstanceOfSatisfying(ButterflyException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SIGNATURE));
    }
}
