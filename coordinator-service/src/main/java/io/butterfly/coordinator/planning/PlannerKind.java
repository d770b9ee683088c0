package io.butterfly.coordinator.planning;

/** The planners to choose from ({@code butterfly.coordinator.planner}). */
public enum PlannerKind {
    /** Largest-remainder shares in proportion to throughput, capped by memory (docs/initialization-and-bootstrap.md §4.2). */
    CAPACITY_WEIGHTED,
    /** Dynamic programming: the smallest possible slowest-stage time within memory (docs/initialization-and-bootstrap.md §5.2). */
    OPTIMAL;

    public PartitionPlanner create() {
        return this == OPTIMAL ? new OptimalPlanner() : new CapacityWeightedPlanner();
    }

    /** The name as written in configuration. */
    public String configName() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
}
