package io.butterfly.common.grpc;

import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.WeightFile;

/**
 * Manifests to and from the registry's messages. A message leaves what it does not carry empty or 0 (no layer
 * range outside LAYER files, no key or signature before signing); the record has null there. The canonical form a
 * signature covers is the same either way (it writes an absent layer as 0 and an absent string as empty).
 */
public final class ManifestMessages {

    private ManifestMessages() {
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
                .setKind(io.butterfly.proto.registry.v1.FileKind.valueOf(f.kind().name()))
                .setFormat(f.format());
        if (f.layerStart() != null) {
            b.setLayerStart(f.layerStart());
        }
        if (f.layerEnd() != null) {
            b.setLayerEnd(f.layerEnd());
        }
        return b.build();
    }

    /**
     * The manifest a message carries, as it came: a file of a kind this version does not know is
     * {@link FileKind#FILE_KIND_UNSPECIFIED} (needed by no stage), and layer numbers on a file other than a LAYER
     * are kept when given, so the signature is checked over what was received.
     */
    public static Manifest fromProto(ModelManifest m) {
        return new Manifest(m.getModelId(), m.getArchitecture(), m.getVersion(), m.getNumLayers(), m.getParameterCount(),
                m.getHiddenSize(), m.getVocabSize(), m.getDtype(),
                m.getFilesList().stream().map(ManifestMessages::fromProto).toList(), m.getMerkleRoot(),
                m.getCreatedAtMs(), emptyAsNull(m.getPublisherKey()), emptyAsNull(m.getSignature()));
    }

    private static ManifestFile fromProto(WeightFile f) {
        FileKind kind = switch (f.getKind()) {
            case CONFIG -> FileKind.CONFIG;
            case TOKENIZER -> FileKind.TOKENIZER;
            case EMBEDDING -> FileKind.EMBEDDING;
            case LAYER -> FileKind.LAYER;
            case HEAD -> FileKind.HEAD;
            case TOKENIZER_CONFIG -> FileKind.TOKENIZER_CONFIG;
            case CHAT_TEMPLATE -> FileKind.CHAT_TEMPLATE;
            case FILE_KIND_UNSPECIFIED, UNRECOGNIZED -> FileKind.FILE_KIND_UNSPECIFIED;
        };
        boolean layered = kind == FileKind.LAYER || f.getLayerStart() != 0 || f.getLayerEnd() != 0;
        return new ManifestFile(f.getName(), f.getSizeBytes(), f.getChecksumAlgorithm(), f.getChecksum(), kind,
                layered ? f.getLayerStart() : null, layered ? f.getLayerEnd() : null, f.getFormat());
    }

    private static String emptyAsNull(String s) {
        return s.isEmpty() ? null : s;
    }
}
