package io.butterfly.worker.partition;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.manifest.VerifiedFile;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This worker's side of cross-validation (docs/bootstrap-protocol.md §6.5): a ChecksumReport of the files its
 * engine loaded, with the SHA-256 this worker computed over each file's bytes when it verified them just
 * before the load (never copied from the manifest), so a node that loaded other bytes than its peers shows
 * up at the coordinator; and the coordinator's verdict. The files are not hashed again: the weights in memory
 * are the verified bytes, whatever happens to the disk copy later.
 */
public class PartitionChecksums {

    private static final Logger log = LoggerFactory.getLogger(PartitionChecksums.class);

    private final PartitionManager partitions;
    private final String nodeId;
    /** Fault injection: report other bytes than those loaded (tests of the way out of a failed validation). */
    private final boolean misreport;
    private ChecksumReport cached;

    public PartitionChecksums(PartitionManager partitions) {
        this(partitions, false);
    }

    /**
     * @param misreport whether this worker claims, on purpose, another digest for the first file it loaded, as a
     *                  worker that loaded other bytes than its peers would (butterfly.worker.unsafe-fault-injection)
     */
    public PartitionChecksums(PartitionManager partitions, boolean misreport) {
        this.partitions = partitions;
        this.nodeId = partitions.settings().nodeId();
        this.misreport = misreport;
    }

    /** The report of the partition loaded for {@code epoch} (computed once per loaded partition). */
    public synchronized ChecksumReport report(long epoch) {
        LoadedPartition loaded = partitions.loaded();
        if (loaded == null) {
            throw new ButterflyException(ErrorCode.VALIDATION_FAILED, ErrorKind.FAILED_PRECONDITION,
                    "no partition is loaded on " + nodeId);
        }
        Assignment a = loaded.assignment();
        if (epoch != a.epoch()) {
            throw new ButterflyException(ErrorCode.STALE_TERM, ErrorKind.FAILED_PRECONDITION,
                    "checksums asked for epoch " + epoch + ", the loaded partition is of epoch " + a.epoch());
        }
        if (cached != null && cached.epoch() == a.epoch() && cached.layerStart() == a.layerStart()
                && cached.layerEnd() == a.layerEnd()) {
            return cached;
        }
        cached = misreport ? misreported(compute(nodeId, loaded)) : compute(nodeId, loaded);
        return cached;
    }

    /** The report of {@code loaded}: every file's verified digest and size, and their Merkle root. */
    static ChecksumReport compute(String nodeId, LoadedPartition loaded) {
        Assignment a = loaded.assignment();
        List<ChecksumReport.FileChecksum> files = new ArrayList<>();
        for (int i = 0; i < loaded.files().size(); i++) {
            VerifiedFile v = loaded.verified().get(i);
            files.add(new ChecksumReport.FileChecksum(loaded.files().get(i).name(), v.sha256(), v.sizeBytes()));
        }
        String root = MerkleTree.rootHex(files.stream().map(ChecksumReport.FileChecksum::sha256).toList());
        return new ChecksumReport(nodeId, a.epoch(), a.layerStart(), a.layerEnd(), a.hasEmbedding(), a.hasHead(),
                List.copyOf(files), root, System.currentTimeMillis());
    }

    /**
     * {@code report} as a worker that loaded other bytes for its first file would send it: that file's digest changed
     * (its last hex digit), the weight hash the root of the digests as sent, so the report is consistent in itself and
     * only the comparison with the manifest tells.
     */
    static ChecksumReport misreported(ChecksumReport report) {
        if (report.files().isEmpty()) {
            return report;
        }
        List<ChecksumReport.FileChecksum> files = new ArrayList<>(report.files());
        ChecksumReport.FileChecksum first = files.get(0);
        String sha = first.sha256();
        char last = sha.charAt(sha.length() - 1);
        files.set(0, new ChecksumReport.FileChecksum(first.name(),
                sha.substring(0, sha.length() - 1) + (last == '0' ? '1' : '0'), first.sizeBytes()));
        String root = MerkleTree.rootHex(files.stream().map(ChecksumReport.FileChecksum::sha256).toList());
        return new ChecksumReport(report.nodeId(), report.epoch(), report.layerStart(), report.layerEnd(),
                report.hasEmbedding(), report.hasHead(), List.copyOf(files), root, report.timestampMs());
    }

    /** Takes note of the coordinator's verdict; whether this node is among those that contributed to the root. */
    public boolean apply(ValidationVerdict verdict) {
        if (verdict.failedNodes().contains(nodeId)) {
            log.error("cross-validation of epoch {} failed for this node: {}", verdict.epoch(), verdict.problems());
        } else {
            log.info("cross-validation of epoch {}: {} (merkle root {})", verdict.epoch(), verdict.status(),
                    verdict.merkleRoot());
        }
        return verdict.validatedNodes().contains(nodeId);
    }
}
