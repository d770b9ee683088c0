package io.butterfly.coordinator.cluster;

/**
 * A control-plane checkpoint in the replicated log (docs/bootstrap-protocol.md §5.3 {@code Checkpoint}): the epoch
 * and the Merkle root of the weights it serves, recorded once they were cross-validated.
 *
 * @param id             {@code ckpt-<log index>}, unique and increasing
 * @param logIndex       log index the checkpoint was applied at
 * @param completedTasks tasks COMPLETED in the state at that moment
 */
public record CheckpointRecord(String id, long epoch, String merkleRoot, long logIndex, long atMs,
                               long completedTasks) {
}
