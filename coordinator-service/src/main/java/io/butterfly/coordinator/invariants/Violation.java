package io.butterfly.coordinator.invariants;

/** One broken invariant with what was seen. */
public record Violation(Invariant invariant, String message) {
}
