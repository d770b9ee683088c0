package io.butterfly.coordinator.planning;

/**
 * Outcome of the feasibility check (docs/initialization-and-bootstrap.md §5.1).
 *
 * @param feasible       whether the cluster can hold the model
 * @param requiredBytes  memory the model needs: weights, KV cache and per-stage activation headroom
 * @param availableBytes memory the workers offer (0 = some worker's memory is unknown)
 * @param reason         human-readable verdict naming need and capacity
 */
public record FeasibilityReport(boolean feasible, long requiredBytes, long availableBytes, String reason) {

    public static FeasibilityReport infeasible(InfeasiblePlanException e) {
        return new FeasibilityReport(false, e.requiredBytes(), e.availableBytes(), e.getMessage());
    }
}
