package io.butterfly.coordinator.cluster;

/**
 * A node in the replicated state: what it declared, its lifecycle, and its assigned partition.
 * {@code layerStart}/{@code layerEnd} are null while the node has no assignment.
 */
public record NodeRecord(NodeInfo info, WorkerState state, Integer layerStart, Integer layerEnd,
                         boolean hasEmbedding, boolean hasHead, PartitionState partition, double loadProgress,
                         String currentFile, String partitionChecksum, String failureCode, String failureMessage,
                         long updatedAtMs) {

    static NodeRecord joined(NodeInfo info, long atMs) {
        return new NodeRecord(info, WorkerState.JOINED, null, null, false, false, PartitionState.UNLOADED, 0.0,
                null, null, null, null, atMs);
    }

    String nodeId() {
        return info.nodeId();
    }

    boolean assigned() {
        return layerStart != null;
    }

    /** A fresh assignment: earlier load progress and failures belong to the old epoch. */
    NodeRecord assign(int start, int end, boolean embedding, boolean head, long atMs) {
        return new NodeRecord(info, WorkerState.JOINED, start, end, embedding, head, PartitionState.UNLOADED, 0.0,
                null, null, null, null, atMs);
    }

    NodeRecord unassign(long atMs) {
        return new NodeRecord(info, state == WorkerState.FAILED ? state : WorkerState.JOINED, null, null, false, false,
                PartitionState.UNLOADED, 0.0, null, null, failureCode, failureMessage, atMs);
    }

    NodeRecord progressed(PartitionState phase, double progress, String file, long atMs) {
        return new NodeRecord(info, WorkerState.JOINED, layerStart, layerEnd, hasEmbedding, hasHead, phase, progress,
                file, null, null, null, atMs);
    }

    NodeRecord loaded(String checksum, long atMs) {
        return new NodeRecord(info, WorkerState.READY, layerStart, layerEnd, hasEmbedding, hasHead,
                PartitionState.READY, 1.0, null, checksum, null, null, atMs);
    }

    NodeRecord failed(String code, String message, long atMs) {
        return new NodeRecord(info, WorkerState.FAILED, layerStart, layerEnd, hasEmbedding, hasHead,
                PartitionState.FAILED, loadProgress, currentFile, null, code, message == null ? "" : message, atMs);
    }
}
