package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.util.Set;

/**
 * A node in the replicated state: what it declared, its lifecycle, and its assigned partition.
 * {@code layerStart}/{@code layerEnd} are null while the node has no assignment.
 *
 * @param kvCacheBudgetBytes the most memory the node's KV caches may take together, as it reported it with its last
 *                           READY load report (a process setting, kept across reassignments and failures); 0: unknown
 *                           (never reported, or a snapshot written before nodes reported it) or no limit
 */
public record NodeRecord(NodeInfo info, WorkerState state, Integer layerStart, Integer layerEnd,
                         boolean hasEmbedding, boolean hasHead, PartitionState partition, double loadProgress,
                         String currentFile, String partitionChecksum, String failureCode, String failureMessage,
                         long updatedAtMs, NodeHealth health, long kvCacheBudgetBytes) {

    /** Load failures another attempt cannot mend: the same bytes, keys or memory would fail it again. */
    private static final Set<String> PERMANENT_LOAD_FAILURES = Set.of("CHECKSUM_MISMATCH", "INVALID_MANIFEST",
            "INVALID_SIGNATURE", "UNTRUSTED_PUBLISHER", "MERKLE_ROOT_MISMATCH", "INSUFFICIENT_MEMORY", "VALIDATION_FAILED");

    public NodeRecord {
        health = health == null ? NodeHealth.NONE : health;
    }

    /** FAILED by its own load (not by the failure detector: that node is gone). */
    public boolean loadFailed() {
        return state == WorkerState.FAILED && partition == PartitionState.FAILED && !health.failedByDetector();
    }

    /** Its load failed for a reason another attempt cannot mend: it waits for an operator. */
    public boolean loadFailedPermanently() {
        // Set.of refuses contains(null): a LoadFailed may be logged without a code.
        return loadFailed() && failureCode != null && PERMANENT_LOAD_FAILURES.contains(failureCode);
    }

    /** Gone: declared FAILED by the failure detector and not back, or evicted by an audit (Byzantine). */
    public boolean lost() {
        return state == WorkerState.FAILED && (health.failedByDetector() || health.byzantine());
    }

    static NodeRecord joined(NodeInfo info, long atMs) {
        return new NodeRecord(info, WorkerState.JOINED, null, null, false, false, PartitionState.UNLOADED, 0.0,
                null, null, null, null, atMs, NodeHealth.NONE, 0);
    }

    String nodeId() {
        return info.nodeId();
    }

    boolean assigned() {
        return layerStart != null;
    }

    /** A fresh assignment: earlier load progress and failures belong to the old epoch. */
    NodeRecord assign(int start, int end, boolean embedding, boolean head, long atMs) {
        return new NodeRecord(info, lifecycle(WorkerState.JOINED), start, end, embedding, head, PartitionState.UNLOADED,
                0.0, null, null, null, null, atMs, healthFor(WorkerState.JOINED), kvCacheBudgetBytes);
    }

    NodeRecord unassign(long atMs) {
        WorkerState next = state == WorkerState.FAILED ? state : WorkerState.JOINED;
        return new NodeRecord(info, lifecycle(next), null, null, false, false, PartitionState.UNLOADED, 0.0, null, null,
                failureCode, failureMessage, atMs, healthFor(next), kvCacheBudgetBytes);
    }

    NodeRecord progressed(PartitionState phase, double progress, String file, long atMs) {
        return new NodeRecord(info, lifecycle(WorkerState.JOINED), layerStart, layerEnd, hasEmbedding, hasHead, phase,
                progress, file, null, null, null, atMs, healthFor(WorkerState.JOINED), kvCacheBudgetBytes);
    }

    NodeRecord loaded(String checksum, long kvCacheBudget, long atMs) {
        return new NodeRecord(info, lifecycle(WorkerState.READY), layerStart, layerEnd, hasEmbedding, hasHead,
                PartitionState.READY, 1.0, null, checksum, null, null, atMs, healthFor(WorkerState.READY), kvCacheBudget);
    }

    /*
     * Suspicion is the failure detector's verdict and only it lifts it (NodeSuspicionCleared or NodeFailed):
     * an assignment or a load report while SUSPECT changes the state the node resumes, not SUSPECT itself.
     * Otherwise a report would make the node READY with the suspicion still on record, and the detector's
     * next verdict on it would be refused as an illegal transition.
     */
    private WorkerState lifecycle(WorkerState next) {
        return state == WorkerState.SUSPECT ? WorkerState.SUSPECT : next;
    }

    private NodeHealth healthFor(WorkerState next) {
        return state == WorkerState.SUSPECT ? health.resumingAs(next) : health;
    }

    NodeRecord failed(String code, String message, long atMs) {
        return new NodeRecord(info, WorkerState.FAILED, layerStart, layerEnd, hasEmbedding, hasHead,
                PartitionState.FAILED, loadProgress, currentFile, null, code, message == null ? "" : message, atMs,
                health, kvCacheBudgetBytes);
    }

    // Failure-detector transitions (docs/state-machines.md §2.2: JOINED/READY -> SUSPECT -> FAILED).

    NodeRecord suspected(long lastHeartbeatMs, double phi, String cause, long atMs) {
        return withLiveness(WorkerState.SUSPECT, partition, health.suspected(state, lastHeartbeatMs, phi, cause, atMs),
                atMs);
    }

    NodeRecord suspicionCleared(long lastHeartbeatMs, long atMs) {
        WorkerState back = health.resumeState() == null ? WorkerState.JOINED : health.resumeState();
        return withLiveness(back, partition, health.cleared(lastHeartbeatMs), atMs);
    }

    NodeRecord detectedFailed(long lastHeartbeatMs, double phi, String cause, long atMs) {
        return withLiveness(WorkerState.FAILED, partition, health.failed(lastHeartbeatMs, phi, cause, atMs), atMs);
    }

    /** Evicted by an audit: FAILED whatever it was, its partition kept as it was (it is planned away, not reloaded). */
    NodeRecord byzantine(String cause, long atMs) {
        return withLiveness(WorkerState.FAILED, partition, health.byzantine(cause, atMs), atMs);
    }

    /**
     * Back after FAILED. A node that kept its loaded partition (it was only unreachable) resumes READY;
     * one that lost it (a restart) is JOINED with its layer range still assigned but UNLOADED, so the
     * state says honestly that the stage must be loaded again.
     */
    NodeRecord recovered(boolean partitionIntact, long lastHeartbeatMs, long atMs) {
        boolean ready = partitionIntact && partition == PartitionState.READY;
        return new NodeRecord(info, ready ? WorkerState.READY : WorkerState.JOINED, layerStart, layerEnd, hasEmbedding,
                hasHead, ready ? PartitionState.READY : PartitionState.UNLOADED, ready ? 1.0 : 0.0, null,
                ready ? partitionChecksum : null, null, null, atMs, health.recovered(lastHeartbeatMs, atMs),
                kvCacheBudgetBytes);
    }

    private NodeRecord withLiveness(WorkerState next, PartitionState part, NodeHealth nextHealth, long atMs) {
        return new NodeRecord(info, next, layerStart, layerEnd, hasEmbedding, hasHead, part, loadProgress,
                currentFile, partitionChecksum, failureCode, failureMessage, atMs, nextHealth, kvCacheBudgetBytes);
    }
}
