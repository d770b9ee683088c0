package io.butterfly.worker.partition;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/** Which manifest files a layer range needs: config, its layers, and embedding/head at the ends. */
public final class ShardSelection {

    private ShardSelection() {
    }

    /** The needed files in manifest order; a layer the manifest lacks is WEIGHT_FILE_NOT_FOUND. */
    public static List<ManifestFile> select(Manifest manifest, int start, int end, boolean embedding, boolean head) {
        if (end > manifest.numLayers()) {
            throw new ButterflyException(ErrorCode.INVALID_MANIFEST, ErrorKind.FAILED_PRECONDITION,
                    "layers [" + start + ", " + end + ") exceed the model's " + manifest.numLayers() + " layers");
        }
        List<ManifestFile> out = new ArrayList<>();
        BitSet covered = new BitSet();
        boolean sawEmbedding = false;
        boolean sawHead = false;
        for (ManifestFile f : manifest.files()) {
            if (f.neededBy(start, end, embedding, head)) {
                out.add(f);
                if (f.kind() == FileKind.LAYER) {
                    covered.set(Math.max(start, f.layerStart()), Math.min(end, f.layerEnd()));
                }
                sawEmbedding |= f.kind() == FileKind.EMBEDDING;
                sawHead |= f.kind() == FileKind.HEAD;
            }
        }
        int missing = covered.nextClearBit(start);
        if (missing < end) {
            throw notFound("layer " + missing);
        }
        if (embedding && !sawEmbedding) {
            throw notFound("the embedding shard");
        }
        if (head && !sawHead) {
            throw notFound("the head shard");
        }
        return out;
    }

    private static ButterflyException notFound(String what) {
        return new ButterflyException(ErrorCode.WEIGHT_FILE_NOT_FOUND, ErrorKind.FAILED_PRECONDITION,
                "manifest has no file for " + what);
    }
}
