package io.butterfly.coordinator.integrity;

import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.planning.StageAssignment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Cross-validation of the loaded weights (docs/initialization-and-bootstrap.md §4.5, docs/bootstrap-protocol.md
 * §6.5), pure. Every stage's report is checked against its assignment and the manifest (each file it
 * must hold is there, with the manifest's digest; its weight hash is the root of its files), then the
 * manifest's Merkle root is rebuilt, in manifest order, from the digests the nodes computed (plus the
 * coordinator's own for the files only it holds, the tokenizer): it equals the manifest's only if every
 * file held anywhere in the cluster is the one the publisher signed. The spec's partition tree (one leaf
 * per stage over node id, layer range and weight hash) is computed too, as a fingerprint of who holds what.
 */
public final class CrossValidation {

    private CrossValidation() {
    }

    /**
     * @param manifestFiles    the manifest's files in manifest order
     * @param manifestRoot     the manifest's (signed) Merkle root
     * @param stages           the assignment of {@code epoch}, in pipeline order
     * @param reports          reports by node id; a stage without one counts as missing
     * @param coordinatorFiles digests the coordinator computed over its own copies (name to SHA-256)
     */
    public static WeightValidation validate(long epoch, List<ManifestFile> manifestFiles, String manifestRoot,
                                            List<StageAssignment> stages, Map<String, PartitionReport> reports,
                                            Map<String, String> coordinatorFiles, long atMs) {
        Map<String, ManifestFile> byName = new LinkedHashMap<>();
        manifestFiles.forEach(f -> byName.put(f.name(), f));
        List<String> problems = new ArrayList<>();
        List<String> validated = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        Map<String, String> observed = new LinkedHashMap<>();
        List<byte[]> partitionLeaves = new ArrayList<>();
        int missing = 0;

        for (StageAssignment stage : stages) {
            String node = stage.nodeId();
            PartitionReport r = reports.get(node);
            if (r == null) {
                missing++;
                failed.add(node);
                problems.add(node + ": no checksum report");
                continue;
            }
            int before = problems.size();
            if (r.layerStart() != stage.layerStart() || r.layerEnd() != stage.layerEnd()) {
                problems.add(node + ": reports layers [" + r.layerStart() + ", " + r.layerEnd() + "), assigned ["
                        + stage.layerStart() + ", " + stage.layerEnd() + ")");
            }
            Map<String, String> reported = new LinkedHashMap<>();
            r.files().forEach(f -> reported.put(f.name(), f.sha256()));
            for (ManifestFile f : manifestFiles) {
                if (f.neededBy(stage.layerStart(), stage.layerEnd(), stage.hasEmbedding(), stage.hasHead())
                        && !reported.containsKey(f.name())) {
                    problems.add(node + ": did not load " + f.name());
                }
            }
            reported.forEach((name, sha) -> check(node, name, sha, byName, observed, problems));
            List<String> own = r.files().stream().map(PartitionReport.FileDigest::sha256).toList();
            String ownRoot = own.stream().allMatch(CrossValidation::isDigest) ? MerkleTree.rootHex(own) : "(malformed)";
            if (!ownRoot.equals(r.weightHash())) {
                problems.add(node + ": weight hash " + r.weightHash() + " is not the root of its files (" + ownRoot + ")");
            }
            (problems.size() == before ? validated : failed).add(node);
            partitionLeaves.add(partitionLeaf(node, r.layerStart(), r.layerEnd(), r.weightHash()));
        }
        coordinatorFiles.forEach((name, sha) -> check("coordinator", name, sha, byName, observed, problems));

        List<String> digests = new ArrayList<>();
        for (ManifestFile f : manifestFiles) {
            String sha = observed.get(f.name());
            if (sha == null) {
                problems.add("no node holds " + f.name());
                missing++;
            }
            digests.add(sha);
        }
        String rebuilt = digests.contains(null) ? null : MerkleTree.rootHex(digests);
        if (rebuilt != null && !rebuilt.equals(manifestRoot)) {
            problems.add("Merkle root of the loaded files " + rebuilt + " differs from the manifest's " + manifestRoot);
        }
        String partitionRoot = partitionLeaves.isEmpty() ? null : Sha256.toHex(MerkleTree.root(partitionLeaves));
        WeightValidation.Status status = missing > 0 ? WeightValidation.Status.INCOMPLETE
                : problems.isEmpty() ? WeightValidation.Status.VALID : WeightValidation.Status.INVALID;
        return new WeightValidation(epoch, status, rebuilt, partitionRoot, validated, failed, problems, atMs);
    }

    /** Compares one reported digest with the manifest; a digest that disagrees wins in {@code observed}. */
    private static void check(String who, String name, String sha, Map<String, ManifestFile> manifest,
                              Map<String, String> observed, List<String> problems) {
        ManifestFile m = manifest.get(name);
        if (m == null) {
            problems.add(who + ": loaded " + name + ", which is not in the manifest");
            return;
        }
        if (!m.checksum().equalsIgnoreCase(Objects.requireNonNullElse(sha, ""))) {
            problems.add(who + ": " + name + " has sha256 " + sha + ", the manifest says " + m.checksum());
            observed.put(name, isDigest(sha) ? sha : MALFORMED);
        } else {
            observed.putIfAbsent(name, sha);
        }
    }

    private static final String MALFORMED = "0".repeat(64);

    private static boolean isDigest(String s) {
        return s != null && s.length() == 64 && s.chars().allMatch(c -> Character.digit(c, 16) >= 0);
    }

    /** docs/initialization-and-bootstrap.md §4.5 leaf: SHA-256(node id || start || end (little-endian u64) || weight hash). */
    static byte[] partitionLeaf(String nodeId, int start, int end, String weightHash) {
        var d = Sha256.newDigest();
        d.update(nodeId.getBytes(StandardCharsets.UTF_8));
        d.update(ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(start).putLong(end).array());
        d.update(isDigest(weightHash) ? Sha256.fromHex(weightHash)
                : (weightHash == null ? "" : weightHash).getBytes(StandardCharsets.UTF_8));
        return d.digest();
    }
}
