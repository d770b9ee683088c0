package io.butterfly.worker.partition;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.registry.v1.WeightFile;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.ChecksumReport;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The worker's ChecksumReport hashes the bytes it loaded, whatever the manifest claims. */
class PartitionChecksumsTest {

    @TempDir
    Path dir;

    @Test
    void digestsComeFromTheLoadedBytesNotFromTheManifest() throws Exception {
        Path a = Files.writeString(dir.resolve("layer_000.safetensors"), "layer zero bytes");
        Path b = Files.writeString(dir.resolve("layer_001.safetensors"), "layer one bytes");
        String claimed = "ab".repeat(32); // what a (lying or stale) manifest says
        List<WeightFile> files = List.of(
                WeightFile.newBuilder().setName("layer_000.safetensors").setChecksum(claimed).build(),
                WeightFile.newBuilder().setName("layer_001.safetensors").setChecksum(claimed).build());
        AssignPartitionRequest assignment = AssignPartitionRequest.newBuilder().setEpoch(3)
                .setLayers(LayerRange.newBuilder().setStart(0).setEnd(2)).setHasEmbedding(true).build();
        LoadedPartition loaded = new LoadedPartition(assignment, files, List.of(a, b));

        ChecksumReport r = PartitionChecksums.compute("w1", loaded);
        String shaA = Sha256.hex("layer zero bytes".getBytes(StandardCharsets.UTF_8));
        String shaB = Sha256.hex("layer one bytes".getBytes(StandardCharsets.UTF_8));
        assertEquals("w1", r.getNodeId());
        assertEquals(3, r.getEpoch());
        assertEquals(2, r.getLayerRange().getEnd());
        assertTrue(r.getHasEmbedding());
        assertEquals(List.of(shaA, shaB), r.getFilesList().stream().map(f -> f.getSha256()).toList());
        assertEquals(16, r.getFiles(0).getSizeBytes());
        assertEquals(MerkleTree.rootHex(List.of(shaA, shaB)), r.getWeightHash());

        // One flipped byte on disk changes the file's digest and the weight hash.
        Files.writeString(b, "layer one bytez");
        ChecksumReport tampered = PartitionChecksums.compute("w1", loaded);
        assertEquals(shaA, tampered.getFiles(0).getSha256());
        assertNotEquals(shaB, tampered.getFiles(1).getSha256());
        assertNotEquals(r.getWeightHash(), tampered.getWeightHash());
    }
}
