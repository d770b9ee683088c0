package io.butterfly.worker.partition;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.transfer.ShardDownloader.VerifiedFile;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.ChecksumReport;
import io.butterfly.proto.worker.v1.ChecksumRequest;
import io.butterfly.proto.worker.v1.FileChecksum;
import io.butterfly.proto.worker.v1.ValidationAck;
import io.butterfly.proto.worker.v1.ValidationResult;
import io.butterfly.worker.config.WorkerProperties;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

/**
 * This worker's side of cross-validation (bootstrap-protocol.md §6.5): a ChecksumReport of the files its
 * engine loaded, with the SHA-256 this worker computed over each file's bytes when it verified them just
 * before the load (never copied from the manifest), so a node that loaded other bytes than its peers shows
 * up at the coordinator; and the coordinator's ValidationResult, kept for inspection. The files are not
 * hashed again: the weights in memory are the verified bytes, whatever happens to the disk copy later.
 */
@Service
public class PartitionChecksums {

    private static final Logger log = LoggerFactory.getLogger(PartitionChecksums.class);

    private final PartitionManager partitions;
    private final WorkerProperties props;
    private ChecksumReport cached;
    private volatile ValidationResult lastValidation;

    public PartitionChecksums(PartitionManager partitions, WorkerProperties props) {
        this.partitions = partitions;
        this.props = props;
    }

    /** Hashes the loaded files once per loaded partition (later requests of the same epoch get the same report). */
    public synchronized ChecksumReport report(ChecksumRequest request) {
        LoadedPartition loaded = partitions.loaded();
        if (loaded == null) {
            throw new ButterflyException(ErrorCode.VALIDATION_FAILED, ErrorKind.FAILED_PRECONDITION,
                    "no partition is loaded on " + props.nodeId());
        }
        long epoch = loaded.assignment().getEpoch();
        if (request.getEpoch() != epoch) {
            throw new ButterflyException(ErrorCode.STALE_TERM, ErrorKind.FAILED_PRECONDITION,
                    "checksums asked for epoch " + request.getEpoch() + ", the loaded partition is of epoch " + epoch);
        }
        if (cached != null && cached.getEpoch() == epoch && cached.getLayerRange().equals(loaded.assignment().getLayers())) {
            return cached;
        }
        cached = compute(props.nodeId(), loaded);
        return cached;
    }

    /** The report of {@code loaded}: every file's verified digest and size, and their Merkle root. */
    static ChecksumReport compute(String nodeId, LoadedPartition loaded) {
        AssignPartitionRequest a = loaded.assignment();
        ChecksumReport.Builder r = ChecksumReport.newBuilder().setNodeId(nodeId).setEpoch(a.getEpoch())
                .setLayerRange(LayerRange.newBuilder(a.getLayers()))
                .setHasEmbedding(a.getHasEmbedding())
                .setHasHead(a.getHasHead());
        List<String> digests = new ArrayList<>();
        for (int i = 0; i < loaded.files().size(); i++) {
            VerifiedFile v = loaded.verified().get(i);
            digests.add(v.sha256());
            r.addFiles(FileChecksum.newBuilder().setName(loaded.files().get(i).name()).setSha256(v.sha256())
                    .setSizeBytes(v.sizeBytes()));
        }
        return r.setWeightHash(MerkleTree.rootHex(digests)).setTimestampMs(System.currentTimeMillis()).build();
    }

    /** Records the coordinator's verdict; answers whether this node is among those that contributed to the root. */
    public ValidationAck apply(ValidationResult result) {
        lastValidation = result;
        boolean contributed = result.getValidatedNodesList().contains(props.nodeId());
        if (result.getFailedNodesList().contains(props.nodeId())) {
            log.error("cross-validation of epoch {} failed for this node: {}", result.getEpoch(), result.getProblemsList());
        } else {
            log.info("cross-validation of epoch {}: {} (merkle root {})", result.getEpoch(), result.getStatus(),
                    result.getMerkleRoot());
        }
        return ValidationAck.newBuilder().setContributed(contributed).build();
    }

    /** The coordinator's last ValidationResult, or null. */
    public ValidationResult lastValidation() {
        return lastValidation;
    }
}
