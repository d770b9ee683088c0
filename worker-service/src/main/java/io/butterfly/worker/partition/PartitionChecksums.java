package io.butterfly.worker.partition;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.proto.common.v1.ErrorCode;
import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.ChecksumReport;
import io.butterfly.proto.worker.v1.ChecksumRequest;
import io.butterfly.proto.worker.v1.FileChecksum;
import io.butterfly.proto.worker.v1.ValidationAck;
import io.butterfly.proto.worker.v1.ValidationResult;
import io.butterfly.worker.config.WorkerProperties;
import io.grpc.Status;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;

/**
 * This worker's side of cross-validation (bootstrap-protocol.md §6.5): a ChecksumReport of the files its
 * engine loaded, hashed here from the bytes on disk that were loaded (never copied from the manifest), so
 * a shard that differs from what the manifest promises shows up at the coordinator; and the
 * coordinator's ValidationResult, kept for inspection.
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
            throw new ButterflyException(ErrorCode.VALIDATION_FAILED, Status.Code.FAILED_PRECONDITION,
                    "no partition is loaded on " + props.nodeId());
        }
        long epoch = loaded.assignment().getEpoch();
        if (request.getEpoch() != epoch) {
            throw new ButterflyException(ErrorCode.STALE_TERM, Status.Code.FAILED_PRECONDITION,
                    "checksums asked for epoch " + request.getEpoch() + ", the loaded partition is of epoch " + epoch);
        }
        if (cached != null && cached.getEpoch() == epoch && cached.getLayerRange().equals(loaded.assignment().getLayers())) {
            return cached;
        }
        cached = compute(props.nodeId(), loaded);
        return cached;
    }

    /** The report of {@code loaded}: every file hashed from its bytes on disk, and their Merkle root. */
    static ChecksumReport compute(String nodeId, LoadedPartition loaded) {
        AssignPartitionRequest a = loaded.assignment();
        ChecksumReport.Builder r = ChecksumReport.newBuilder().setNodeId(nodeId).setEpoch(a.getEpoch())
                .setLayerRange(LayerRange.newBuilder(a.getLayers()))
                .setHasEmbedding(a.getHasEmbedding())
                .setHasHead(a.getHasHead());
        List<String> digests = new ArrayList<>();
        for (int i = 0; i < loaded.files().size(); i++) {
            Path p = loaded.paths().get(i);
            try {
                String sha = Sha256.hexOfFile(p);
                digests.add(sha);
                r.addFiles(FileChecksum.newBuilder().setName(loaded.files().get(i).getName()).setSha256(sha)
                        .setSizeBytes(Files.size(p)));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read loaded file " + p, e);
            }
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
