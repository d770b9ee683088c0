package io.butterfly.worker.partition;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.transfer.ShardDownloader.VerifiedFile;
import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.ChecksumReport;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The worker's ChecksumReport carries the digests its loaded bytes were verified with, whatever the manifest claims. */
class PartitionChecksumsTest {

    private static final AssignPartitionRequest ASSIGNMENT = AssignPartitionRequest.newBuilder().setEpoch(3)
            .setLayers(LayerRange.newBuilder().setStart(0).setEnd(2)).setHasEmbedding(true).build();

    @Test
    void digestsComeFromTheVerifiedBytesNotFromTheManifest() {
        String shaA = Sha256.hex("layer zero bytes".getBytes(StandardCharsets.UTF_8));
        String shaB = Sha256.hex("layer one bytes".getBytes(StandardCharsets.UTF_8));
        String claimed = "ab".repeat(32); // what a (lying or stale) manifest says
        List<ManifestFile> files = List.of(layer("layer_000.safetensors", claimed), layer("layer_001.safetensors", claimed));
        LoadedPartition loaded = new LoadedPartition(ASSIGNMENT, files, List.of(
                new VerifiedFile(Path.of("layer_000.safetensors"), shaA, 16),
                new VerifiedFile(Path.of("layer_001.safetensors"), shaB, 15)));

        ChecksumReport r = PartitionChecksums.compute("w1", loaded);
        assertEquals("w1", r.getNodeId());
        assertEquals(3, r.getEpoch());
        assertEquals(2, r.getLayerRange().getEnd());
        assertTrue(r.getHasEmbedding());
        assertEquals(List.of(shaA, shaB), r.getFilesList().stream().map(f -> f.getSha256()).toList());
        assertEquals(List.of(16L, 15L), r.getFilesList().stream().map(f -> f.getSizeBytes()).toList());
        assertEquals(MerkleTree.rootHex(List.of(shaA, shaB)), r.getWeightHash());
    }

    @Test
    void otherBytesGiveAnotherWeightHash() {
        List<ManifestFile> files = List.of(layer("layer_000.safetensors", ""));
        ChecksumReport one = PartitionChecksums.compute("w1", new LoadedPartition(ASSIGNMENT, files, List.of(
                new VerifiedFile(Path.of("a"), Sha256.hex("layer one bytes".getBytes(StandardCharsets.UTF_8)), 15))));
        ChecksumReport flipped = PartitionChecksums.compute("w1", new LoadedPartition(ASSIGNMENT, files, List.of(
                new VerifiedFile(Path.of("a"), Sha256.hex("layer one bytez".getBytes(StandardCharsets.UTF_8)), 15))));
        assertNotEquals(one.getWeightHash(), flipped.getWeightHash());
    }

    private static ManifestFile layer(String name, String checksum) {
        return new ManifestFile(name, 0, "sha256", checksum, FileKind.LAYER, 0, 1, "safetensors");
    }
}
