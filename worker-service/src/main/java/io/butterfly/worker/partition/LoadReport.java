package io.butterfly.worker.partition;

import io.butterfly.common.error.ErrorCode;

/**
 * What the coordinator is told of a load (LoadProgress, LoadComplete or a failure, docs/bootstrap-protocol.md §6.4).
 * Absent values are null, zero or false.
 *
 * @param estimatedCompletionSecs seconds until every byte is fetched, from the rate so far (-1: unknown)
 * @param memoryBytes             what the loaded weights take (READY)
 * @param kvCacheBudgetBytes      the most memory this worker's KV caches may take together, 0 = no limit (READY): the
 *                                coordinator's scheduler reserves sequences against it
 */
public record LoadReport(String modelId, long epoch, LoadPhase phase, double progress, long bytesDone, long bytesTotal,
                         String currentFile, double estimatedCompletionSecs, boolean warmupStarted,
                         String partitionChecksum, long loadMillis, double warmupMillis, long memoryBytes,
                         boolean warmupSuccess, ErrorCode errorCode, String errorMessage, long kvCacheBudgetBytes) {

    /** Progress of a load in {@code phase}. */
    static LoadReport progress(PartitionStatus s, LoadPhase phase, double estimatedCompletionSecs) {
        return new LoadReport(s.modelId(), s.epoch(), phase, s.progress(), s.bytesDone(), s.bytesTotal(), s.currentFile(),
                estimatedCompletionSecs, phase == LoadPhase.WARMING, null, 0, 0, 0, false, null, null, 0);
    }

    /** LoadComplete of a READY partition whose weights take {@code memoryBytes}, on a worker of that KV-cache budget. */
    static LoadReport ready(PartitionStatus s, long memoryBytes, long kvCacheBudgetBytes) {
        return new LoadReport(s.modelId(), s.epoch(), LoadPhase.READY, 1.0, s.bytesTotal(), s.bytesTotal(), null, 0, true,
                s.partitionChecksum(), s.loadMillis(), s.warmupMillis(), memoryBytes, true, null, null, kvCacheBudgetBytes);
    }

    static LoadReport failed(Assignment a, ErrorCode code, String message) {
        return new LoadReport(a.modelId(), a.epoch(), LoadPhase.FAILED, 0, 0, 0, null, 0, false, null, 0, 0, 0, false,
                code, message, 0);
    }
}
