package io.butterfly.coordinator.integrity;

import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.ManifestFile;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.planning.StageAssignment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class CrossValidationTest {

    private static final List<ManifestFile> FILES = List.of(
            file("config.json", "CONFIG", 0, 0),
            file("tokenizer.json", "TOKENIZER", 0, 0),
            file("embedding.safetensors", "EMBEDDING", 0, 0),
            file("layer_000.safetensors", "LAYER", 0, 1),
            file("layer_001.safetensors", "LAYER", 1, 2),
            file("layer_002.safetensors", "LAYER", 2, 3),
            file("layer_003.safetensors", "LAYER", 3, 4),
            file("head.safetensors", "HEAD", 0, 0));
    private static final String ROOT = MerkleTree.rootHex(FILES.stream().map(ManifestFile::checksum).toList());
    private static final List<StageAssignment> STAGES = List.of(new StageAssignment("w1", 0, 2, true, false),
            new StageAssignment("w2", 2, 4, false, true));
    private static final Map<String, String> COORDINATOR = Map.of("tokenizer.json", sha("tokenizer.json"),
            "config.json", sha("config.json"));

    @Test
    void honestReportsRebuildTheManifestRoot() {
        WeightValidation v = CrossValidation.validate(3, FILES, ROOT, STAGES, honest(), COORDINATOR, 10);
        assertEquals(WeightValidation.Status.VALID, v.status(), v.problems().toString());
        assertEquals(ROOT, v.merkleRoot());
        assertEquals(List.of("w1", "w2"), v.validatedNodes());
        assertTrue(v.failedNodes().isEmpty());
        assertEquals(64, v.partitionRoot().length());
    }

    @Test
    void aDifferingFileNamesNodeAndFile() {
        Map<String, PartitionReport> reports = honest();
        reports.put("w2", report("w2", 2, 4, List.of("config.json", "layer_002.safetensors", "layer_003.safetensors",
                "head.safetensors"), "layer_003.safetensors"));
        WeightValidation v = CrossValidation.validate(3, FILES, ROOT, STAGES, reports, COORDINATOR, 10);
        assertEquals(WeightValidation.Status.INVALID, v.status());
        assertEquals(List.of("w1"), v.validatedNodes());
        assertEquals(List.of("w2"), v.failedNodes());
        assertTrue(v.problems().stream().anyMatch(p -> p.startsWith("w2: layer_003.safetensors has sha256")),
                v.problems().toString());
        assertNotEquals(ROOT, v.merkleRoot());
        assertTrue(v.problems().stream().anyMatch(p -> p.startsWith("Merkle root of the loaded files")));
    }

    @Test
    void missingReportsAndFilesAreIncompleteOrInvalid() {
        Map<String, PartitionReport> reports = honest();
        reports.remove("w2");
        WeightValidation v = CrossValidation.validate(3, FILES, ROOT, STAGES, reports, COORDINATOR, 10);
        assertEquals(WeightValidation.Status.INCOMPLETE, v.status());
        assertNull(v.merkleRoot()); // head and layers 2-3 are held by nobody who answered
        assertTrue(v.problems().contains("w2: no checksum report"));

        Map<String, PartitionReport> partial = honest();
        partial.put("w1", report("w1", 0, 2, List.of("config.json", "embedding.safetensors", "layer_000.safetensors"),
                null));
        WeightValidation v2 = CrossValidation.validate(3, FILES, ROOT, STAGES, partial, COORDINATOR, 10);
        assertTrue(v2.problems().contains("w1: did not load layer_001.safetensors"), v2.problems().toString());
        assertEquals(List.of("w1"), v2.failedNodes());
    }

    @Test
    void aWrongRangeOrForgedWeightHashIsInvalid() {
        Map<String, PartitionReport> reports = honest();
        PartitionReport w1 = reports.get("w1");
        reports.put("w1", new PartitionReport("w1", 0, 3, w1.weightHash(), w1.files()));
        assertEquals(WeightValidation.Status.INVALID,
                CrossValidation.validate(3, FILES, ROOT, STAGES, reports, COORDINATOR, 10).status());
        reports.put("w1", new PartitionReport("w1", 0, 2, sha("forged"), w1.files()));
        WeightValidation v = CrossValidation.validate(3, FILES, ROOT, STAGES, reports, COORDINATOR, 10);
        assertEquals(WeightValidation.Status.INVALID, v.status());
        assertTrue(v.problems().get(0).contains("is not the root of its files"), v.problems().toString());
    }

    @Test
    void anyCorruptedDigestIsDetected() {
        Random random = new Random(5);
        for (int trial = 0; trial < 200; trial++) {
            Map<String, PartitionReport> reports = honest();
            String node = random.nextBoolean() ? "w1" : "w2";
            PartitionReport r = reports.get(node);
            int k = random.nextInt(r.files().size());
            List<PartitionReport.FileDigest> files = new ArrayList<>(r.files());
            byte[] d = Sha256.fromHex(files.get(k).sha256());
            d[random.nextInt(32)] ^= (byte) (1 << random.nextInt(8));
            files.set(k, new PartitionReport.FileDigest(files.get(k).name(), Sha256.toHex(d)));
            reports.put(node, new PartitionReport(node, r.layerStart(), r.layerEnd(),
                    MerkleTree.rootHex(files.stream().map(PartitionReport.FileDigest::sha256).toList()), files));
            WeightValidation v = CrossValidation.validate(1, FILES, ROOT, STAGES, reports, COORDINATOR, 10);
            assertEquals(WeightValidation.Status.INVALID, v.status(), "trial " + trial);
            assertTrue(v.failedNodes().contains(node), "trial " + trial);
        }
    }

    private static Map<String, PartitionReport> honest() {
        Map<String, PartitionReport> m = new LinkedHashMap<>();
        m.put("w1", report("w1", 0, 2, List.of("config.json", "embedding.safetensors", "layer_000.safetensors",
                "layer_001.safetensors"), null));
        m.put("w2", report("w2", 2, 4, List.of("config.json", "layer_002.safetensors", "layer_003.safetensors",
                "head.safetensors"), null));
        return m;
    }

    /** A report whose digests are computed from each file's "content"; {@code tampered} gets other content. */
    private static PartitionReport report(String node, int start, int end, List<String> names, String tampered) {
        List<PartitionReport.FileDigest> files = names.stream()
                .map(n -> new PartitionReport.FileDigest(n, sha(n.equals(tampered) ? n + "!" : n))).toList();
        return new PartitionReport(node, start, end,
                MerkleTree.rootHex(files.stream().map(PartitionReport.FileDigest::sha256).toList()), files);
    }

    private static ManifestFile file(String name, String kind, int start, int end) {
        return new ManifestFile(name, 0, "sha256", sha(name), FileKind.valueOf(kind), start, end, "safetensors");
    }

    private static String sha(String content) {
        return Sha256.toHex(Sha256.digest(content.getBytes(StandardCharsets.UTF_8)));
    }
}
