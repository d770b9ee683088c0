package io.butterfly.coordinator.statemachine;

/**
 * A transition the spec forbids explicitly, with its reason. A null {@code from} or {@code to} stands for the
 * spec's "Any" (e.g. "TERMINATED -> Any", "Any -> BOOTSTRAPPING").
 */
public record ForbiddenTransition<S extends Enum<S>>(S from, S to, String reason) {

    boolean matches(S f, S t) {
        return (from == null || from == f) && (to == null || to == t);
    }
}
