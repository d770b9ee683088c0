package io.butterfly.coordinator.statemachine;

/** One legal edge of a state machine, with the spec's trigger name kept as data (e.g. {@code bootstrap()}). */
public record Transition<S extends Enum<S>>(S from, S to, String trigger) {
}
