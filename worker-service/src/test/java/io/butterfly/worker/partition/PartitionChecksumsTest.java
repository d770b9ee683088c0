package io.butterfly.worker.partition;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.VerifiedFile;
import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.worker.cluster.Endpoint;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The worker's ChecksumReport carries the digests its loaded bytes were verified with, whatever the manifest claims. */
class PartitionChecksumsTest {

    private static final Endpoint NOWHERE = new Endpoint("", "", 0);
    private static final Assignment ASSIGNMENT = new Assignment("", 0, 2, true, false, 3, 0, NOWHERE, NOWHERE, List.of());

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
        assertEquals("w1", r.nodeId());
        assertEquals(3, r.epoch());
        assertEquals(2, r.layerEnd());
        assertTrue(r.hasEmbedding());
        assertEquals(List.of(shaA, shaB), r.files().stream().map(ChecksumReport.FileChecksum::sha256).toList());
        assertEquals(List.of(16L, 15L), r.files().stream().map(ChecksumReport.FileChecksum::sizeBytes).toList());
        assertEquals(MerkleTree.rootHex(List.of(shaA, shaB)), r.weightHash());
    }

    @Test
    void otherBytesGiveAnotherWeightHash() {
        List<ManifestFile> files = List.of(layer("layer_000.safetensors", ""));
        ChecksumReport one = PartitionChecksums.compute("w1", new LoadedPartition(ASSIGNMENT, files, List.of(
                new VerifiedFile(Path.of("a"), Sha256.hex("layer one bytes".getBytes(StandardCharsets.UTF_8)), 15))));
        ChecksumReport flipped = PartitionChecksums.compute("w1", new LoadedPartition(ASSIGNMENT, files, List.of(
                new VerifiedFile(Path.of("a"), Sha256.hex("layer one bytez".getBytes(StandardCharsets.UTF_8)), 15))));
        assertNotEquals(one.weightHash(), flipped.weightHash());
    }

    @Test
    void aMisreportedReportClaimsAnotherDigestForItsFirstFileAndIsConsistentInItself() {
        String shaA = Sha256.hex("layer zero".getBytes(StandardCharsets.UTF_8));
        String shaB = Sha256.hex("layer one".getBytes(StandardCharsets.UTF_8));
        List<ManifestFile> files = List.of(layer("layer_000.safetensors", shaA), layer("layer_001.safetensors", shaB));
        ChecksumReport honest = PartitionChecksums.compute("w1", new LoadedPartition(ASSIGNMENT, files, List.of(
                new VerifiedFile(Path.of("a"), shaA, 16), new VerifiedFile(Path.of("b"), shaB, 15))));
        ChecksumReport lie = PartitionChecksums.misreported(honest);
        List<String> sent = lie.files().stream().map(ChecksumReport.FileChecksum::sha256).toList();
        assertNotEquals(shaA, sent.get(0));
        assertEquals(64, sent.get(0).length());
        assertEquals(shaB, sent.get(1));
        assertEquals(MerkleTree.rootHex(sent), lie.weightHash());
        assertNotEquals(honest.weightHash(), lie.weightHash());
    }

    private static ManifestFile layer(String name, String checksum) {
        return new ManifestFile(name, 0, "sha256", checksum, FileKind.LAYER, 0, 1, "safetensors");
    }
}
