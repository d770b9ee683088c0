package io.butterfly.common.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestCanonicalForm;
import io.butterfly.common.manifest.ManifestVerifier;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.WeightFile;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A manifest crosses the wire as it is: the record read from a message is signed over what the message held. */
class ManifestMessagesTest {

    private static final NodeIdentity PUBLISHER = NodeIdentity.ephemeral();

    private static WeightFile.Builder file(String name, io.butterfly.proto.registry.v1.FileKind kind) {
        return WeightFile.newBuilder().setName(name).setSizeBytes(10).setChecksumAlgorithm("sha256")
                .setChecksum("ab".repeat(32)).setKind(kind).setFormat("safetensors");
    }

    private static ModelManifest signedMessage(WeightFile... files) {
        ModelManifest unsigned = ModelManifest.newBuilder().setModelId("m").setArchitecture("llama").setVersion("v")
                .setNumLayers(2).setDtype("F32").addAllFiles(List.of(files)).setMerkleRoot("00").build();
        // Signed over the message's own fields, as another publisher would sign it.
        return ManifestMessages.toProto(ManifestVerifier.sign(ManifestMessages.fromProto(unsigned), PUBLISHER));
    }

    @Test
    void aRegistrysManifestRoundTripsWithTheSameCanonicalForm() {
        ModelManifest sent = signedMessage(file("config.json", io.butterfly.proto.registry.v1.FileKind.CONFIG).build(),
                file("layer-0.safetensors", io.butterfly.proto.registry.v1.FileKind.LAYER).setLayerStart(0).setLayerEnd(1).build(),
                file("layer-1.safetensors", io.butterfly.proto.registry.v1.FileKind.LAYER).setLayerStart(1).setLayerEnd(2).build());

        Manifest read = ManifestMessages.fromProto(sent);

        assertThat(ManifestMessages.toProto(read)).isEqualTo(sent);
        assertThat(read.files().get(0).layerStart()).as("no layer range outside LAYER files").isNull();
        assertThat(read.files().get(1).layerStart()).isZero();
        assertThat(read.files().get(2).layerEnd()).isEqualTo(2);
    }

    @Test
    void layerNumbersOnAnotherKindOfFileAndUnknownKindsAreKeptAsReceived() {
        ModelManifest odd = ModelManifest.newBuilder().setModelId("m")
                .addFiles(file("head.safetensors", io.butterfly.proto.registry.v1.FileKind.HEAD).setLayerStart(3).setLayerEnd(4))
                .addFiles(file("extra.bin", io.butterfly.proto.registry.v1.FileKind.FILE_KIND_UNSPECIFIED))
                .addFiles(file("newer.bin", io.butterfly.proto.registry.v1.FileKind.HEAD).setKindValue(99))
                .build();

        Manifest read = ManifestMessages.fromProto(odd);

        assertThat(read.files().get(0).layerStart()).isEqualTo(3);
        assertThat(read.files().get(0).layerEnd()).isEqualTo(4);
        assertThat(read.files().get(1).kind()).isEqualTo(FileKind.FILE_KIND_UNSPECIFIED);
        assertThat(read.files().get(2).kind()).isEqualTo(FileKind.FILE_KIND_UNSPECIFIED);
        assertThat(read.files().get(1).neededBy(0, 100, true, true)).as("no stage loads a file of unknown kind").isFalse();
        // The signature covers the head's layer numbers as sent: dropping them would change the signed bytes.
        Manifest withoutLayers = ManifestMessages.fromProto(odd.toBuilder().setFiles(0,
                odd.getFiles(0).toBuilder().clearLayerStart().clearLayerEnd()).build());
        assertThat(ManifestCanonicalForm.of(read)).isNotEqualTo(ManifestCanonicalForm.of(withoutLayers));
    }
}
