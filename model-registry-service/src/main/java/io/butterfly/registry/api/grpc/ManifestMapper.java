package io.butterfly.registry.api.grpc;

import io.butterfly.proto.registry.v1.FileKind;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.WeightFile;
import io.butterfly.registry.catalog.Manifest;
import io.butterfly.registry.catalog.ManifestFile;

/** Catalog manifests to protos. */
public final class ManifestMapper {

    private ManifestMapper() {
    }

    public static ModelManifest toProto(Manifest m) {
        ModelManifest.Builder b = ModelManifest.newBuilder()
                .setModelId(m.modelId())
                .setArchitecture(m.architecture())
                .setVersion(m.version())
                .setNumLayers(m.numLayers())
                .setParameterCount(m.parameterCount())
                .setHiddenSize(m.hiddenSize())
                .setVocabSize(m.vocabSize())
                .setDtype(m.dtype())
                .setMerkleRoot(m.merkleRoot())
                .setCreatedAtMs(m.createdAtMs());
        if (m.publisherKey() != null) {
            b.setPublisherKey(m.publisherKey());
        }
        if (m.signature() != null) {
            b.setSignature(m.signature());
        }
        for (ManifestFile f : m.files()) {
            b.addFiles(toProto(f));
        }
        return b.build();
    }

    public static WeightFile toProto(ManifestFile f) {
        WeightFile.Builder b = WeightFile.newBuilder()
                .setName(f.name())
                .setSizeBytes(f.sizeBytes())
                .setChecksumAlgorithm(f.checksumAlgorithm())
                .setChecksum(f.checksum())
                .setKind(FileKind.valueOf(f.kind().name()))
                .setFormat(f.format());
        if (f.layerStart() != null) {
            b.setLayerStart(f.layerStart());
        }
        if (f.layerEnd() != null) {
            b.setLayerEnd(f.layerEnd());
        }
        return b.build();
    }
}
