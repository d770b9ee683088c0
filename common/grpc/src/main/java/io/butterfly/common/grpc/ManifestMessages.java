package io.butterfly.common.grpc;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.WeightFile;
import java.util.Map;

/**
 * Manifests to and from the registry's messages. A message leaves what it does not carry empty or 0 (no layer
 * range outside LAYER files, no key or signature before signing); the record has null there. The canonical form a
 * signature covers is the same either way.
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

    /** The manifest a message carries; a file of no known kind makes it invalid (INVALID_MANIFEST). */
    public static Manifest fromProto(ModelManifest m) {
        return new Manifest(m.getModelId(), m.getArchitecture(), m.getVersion(), m.getNumLayers(), m.getParameterCount(),
                m.getHiddenSize(), m.getVocabSize(), m.getDtype(),
                m.getFilesList().stream().map(f -> fromProto(m.getModelId(), f)).toList(), m.getMerkleRoot(),
                m.getCreatedAtMs(), emptyAsNull(m.getPublisherKey()), emptyAsNull(m.getSignature()));
    }

    private static ManifestFile fromProto(String modelId, WeightFile f) {
        FileKind kind = switch (f.getKind()) {
            case CONFIG -> FileKind.CONFIG;
            case TOKENIZER -> FileKind.TOKENIZER;
            case EMBEDDING -> FileKind.EMBEDDING;
            case LAYER -> FileKind.LAYER;
            case HEAD -> FileKind.HEAD;
            case FILE_KIND_UNSPECIFIED, UNRECOGNIZED -> throw new ButterflyException(ErrorCode.INVALID_MANIFEST,
                    ErrorKind.INVALID_ARGUMENT, "manifest of '" + modelId + "' lists file '" + f.getName()
                    + "' of no known kind (" + f.getKindValue() + ")", Map.of("model_id", modelId), null);
        };
        boolean layered = kind == FileKind.LAYER;
        return new ManifestFile(f.getName(), f.getSizeBytes(), f.getChecksumAlgorithm(), f.getChecksum(), kind,
                layered ? f.getLayerStart() : null, layered ? f.getLayerEnd() : null, f.getFormat());
    }

    private static String emptyAsNull(String s) {
        return s.isEmpty() ? null : s;
    }
}
