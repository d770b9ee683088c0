package io.butterfly.coordinator.control;

/**
 * How many of this replica's requests are paused, waiting for a recovery (a re-plan) to end before they go on: shown
 * with the recovery in {@code GET /api/v1/system/state}. Implemented by whoever pauses them (the serving engine).
 */
public interface PausedRequests {

    int pausedRequests();
}
