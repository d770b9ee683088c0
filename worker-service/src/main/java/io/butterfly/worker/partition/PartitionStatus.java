package io.butterfly.worker.partition;

/**
 * What this worker holds right now, as reported to the coordinator and on {@code /api/v1/worker/*}.
 *
 * @param modelId           assigned model, or null before an assignment
 * @param epoch             epoch of the assignment
 * @param layerStart        first layer (inclusive)
 * @param layerEnd          last layer (exclusive)
 * @param phase             load phase (partition state machine, docs/state-machines.md §2.5)
 * @param progress          0..1 of the bytes to fetch
 * @param bytesDone         bytes fetched and verified
 * @param bytesTotal        bytes to fetch
 * @param currentFile       file being fetched
 * @param partitionChecksum Merkle root over this partition's file checksums, once verified
 * @param error             why loading failed
 * @param loadedInEpoch     the epoch the partition was loaded for: earlier than {@code epoch} when a re-plan left this
 *                          stage as it was and the worker held it on without loading
 */
public record PartitionStatus(String modelId, long epoch, int layerStart, int layerEnd, boolean hasEmbedding,
                              boolean hasHead, LoadPhase phase, double progress, long bytesDone, long bytesTotal,
                              String currentFile, String partitionChecksum, long loadMillis, double warmupMillis,
                              String error, long loadedInEpoch) {

    public static PartitionStatus unassigned() {
        return new PartitionStatus(null, 0, 0, 0, false, false, LoadPhase.LOAD_PHASE_UNSPECIFIED, 0, 0, 0, null, null, 0,
                0, null, 0);
    }

    /** A new assignment, its load about to start. */
    static PartitionStatus loading(Assignment a) {
        return new PartitionStatus(a.modelId(), a.epoch(), a.layerStart(), a.layerEnd(), a.hasEmbedding(), a.hasHead(),
                LoadPhase.DOWNLOADING, 0, 0, 0, null, null, 0, 0, null, a.epoch());
    }

    PartitionStatus withPhase(LoadPhase p) {
        return new PartitionStatus(modelId, epoch, layerStart, layerEnd, hasEmbedding, hasHead, p, progress, bytesDone,
                bytesTotal, currentFile, partitionChecksum, loadMillis, warmupMillis, error, loadedInEpoch);
    }

    PartitionStatus withProgress(String file, long done, long total) {
        return new PartitionStatus(modelId, epoch, layerStart, layerEnd, hasEmbedding, hasHead, phase,
                total == 0 ? 1.0 : (double) done / total, done, total, file, partitionChecksum, loadMillis, warmupMillis,
                error, loadedInEpoch);
    }

    PartitionStatus ready(String checksum, long loadMs, double warmupMs) {
        return new PartitionStatus(modelId, epoch, layerStart, layerEnd, hasEmbedding, hasHead, LoadPhase.READY, 1.0,
                bytesTotal, bytesTotal, null, checksum, loadMs, warmupMs, null, loadedInEpoch);
    }

    /** The same partition, held on in epoch {@code next}. */
    PartitionStatus inEpoch(long next) {
        return new PartitionStatus(modelId, next, layerStart, layerEnd, hasEmbedding, hasHead, phase, progress,
                bytesDone, bytesTotal, currentFile, partitionChecksum, loadMillis, warmupMillis, error, loadedInEpoch);
    }

    PartitionStatus failed(String message) {
        return new PartitionStatus(modelId, epoch, layerStart, layerEnd, hasEmbedding, hasHead, LoadPhase.FAILED, progress,
                bytesDone, bytesTotal, currentFile, partitionChecksum, loadMillis, warmupMillis, message, loadedInEpoch);
    }
}
