package io.butterfly.common.manifest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.registry.v1.FileKind;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.WeightFile;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ManifestVerifierTest {

    private final NodeIdentity publisher = NodeIdentity.ephemeral();
    private final ManifestVerifier verifier = new ManifestVerifier(List.of(publisher.publicKeyHex()));

    private static ModelManifest unsigned() {
        WeightFile a = WeightFile.newBuilder().setName("config.json").setSizeBytes(10).setChecksumAlgorithm("sha256")
                .setChecksum("aa".repeat(32)).setKind(FileKind.CONFIG).setFormat("json").build();
        WeightFile b = WeightFile.newBuilder().setName("layer_000.safetensors").setSizeBytes(1000)
                .setChecksumAlgorithm("sha256").setChecksum("bb".repeat(32)).setKind(FileKind.LAYER)
                .setLayerStart(0).setLayerEnd(1).setFormat("safetensors").build();
        return ModelManifest.newBuilder().setModelId("m").setArchitecture("llama").setVersion("v1").setNumLayers(1)
                .setParameterCount(1234).setHiddenSize(8).setVocabSize(16).setDtype("F32").addFiles(a).addFiles(b)
                .setMerkleRoot(MerkleTree.rootHex(List.of(a.getChecksum(), b.getChecksum()))).setCreatedAtMs(42)
                .build();
    }

    @Test
    void acceptsAManifestSignedByATrustedPublisher() {
        ModelManifest signed = ManifestVerifier.sign(unsigned(), publisher);
        assertThat(signed.getPublisherKey()).isEqualTo(publisher.publicKeyHex());
        assertThat(verifier.verify(signed)).isSameAs(signed);
    }

    @Test
    void refusesAManifestSignedByAnUntrustedKey() {
        ModelManifest signed = ManifestVerifier.sign(unsigned(), NodeIdentity.ephemeral());
        assertThatThrownBy(() -> verifier.verify(signed)).isInstanceOfSatisfying(ButterflyException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.UNTRUSTED_PUBLISHER));
        assertThatThrownBy(() -> new ManifestVerifier(List.of()).verify(ManifestVerifier.sign(unsigned(), publisher)))
                .isInstanceOfSatisfying(ButterflyException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.UNTRUSTED_PUBLISHER));
    }

    @Test
    void refusesAForgedSignatureAndAnyChangeAfterSigning() {
        ModelManifest signed = ManifestVerifier.sign(unsigned(), publisher);
        // Forged: a trusted key claimed, but the signature is made by another key.
        NodeIdentity forger = NodeIdentity.ephemeral();
        ModelManifest claimed = signed.toBuilder().clearSignature().build();
        ModelManifest forged = claimed.toBuilder()
                .setSignature(Ed25519.hex(forger.sign(ManifestCanonicalForm.of(claimed)))).build();
        assertInvalidSignature(forged);
        assertInvalidSignature(signed.toBuilder().setSignature("zz").build());
        assertInvalidSignature(signed.toBuilder().clearSignature().build());
        // Any covered field changed after signing (seeded random picks): checksum, size, layer range, root.
        Random rnd = new Random(7);
        for (int i = 0; i < 20; i++) {
            ModelManifest.Builder t = signed.toBuilder();
            WeightFile f = t.getFiles(1);
            switch (rnd.nextInt(5)) {
                case 0 -> t.setFiles(1, f.toBuilder().setChecksum("cc".repeat(32)));
                case 1 -> t.setFiles(1, f.toBuilder().setSizeBytes(f.getSizeBytes() + 1 + rnd.nextInt(100)));
                case 2 -> t.setFiles(1, f.toBuilder().setLayerEnd(2 + rnd.nextInt(5)));
                case 3 -> t.setNumLayers(2 + rnd.nextInt(5));
                default -> t.setMerkleRoot("dd".repeat(32));
            }
            assertInvalidSignature(t.build());
        }
    }

    @Test
    void refusesASignedManifestWhoseMerkleRootDoesNotBindItsFiles() {
        ModelManifest lying = unsigned().toBuilder().setMerkleRoot("ee".repeat(32)).build();
        assertThatThrownBy(() -> verifier.verify(ManifestVerifier.sign(lying, publisher)))
                .isInstanceOfSatisfying(ButterflyException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.MERKLE_ROOT_MISMATCH));
    }

    @Test
    void refusesASignedManifestWhoseModelIdIsNotOnePathSegment() {
        for (String id : new String[]{"../../etc", "a/b", "/abs", "..", ".hidden", ""}) {
            ModelManifest m = unsigned().toBuilder().setModelId(id).build();
            assertThatThrownBy(() -> verifier.verify(ManifestVerifier.sign(m, publisher))).as(id)
                    .isInstanceOfSatisfying(ButterflyException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                        assertThat(e.getMessage()).contains("model id '" + id + "'");
                    });
        }
    }

    @Test
    void refusesASignedManifestListingAFileTwiceOrBesideItsPartName() {
        ModelManifest base = unsigned();
        WeightFile layer = base.getFiles(1);
        for (WeightFile extra : new WeightFile[]{layer, layer.toBuilder().setName(layer.getName() + ".part").build()}) {
            ModelManifest.Builder b = base.toBuilder().addFiles(extra);
            ModelManifest m = b.setMerkleRoot(MerkleTree.rootHex(b.getFilesList().stream().map(WeightFile::getChecksum).toList()))
                    .build();
            assertThatThrownBy(() -> verifier.verify(ManifestVerifier.sign(m, publisher))).as(extra.getName())
                    .isInstanceOfSatisfying(ButterflyException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                        assertThat(e.getMessage()).contains(layer.getName());
                    });
        }
    }

    private void assertInvalidSignature(ModelManifest m) {
        assertThatThrownBy(() -> verifier.verify(m)).isInstanceOfSatisfying(ButterflyException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SIGNATURE));
    }
}
