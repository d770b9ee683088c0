package io.butterfly.coordinator.statemachine;

/** One applied transition (docs/state-machines.md §7.2): which machine and entity, from/to, the command that caused it, epoch and time. */
public record TransitionRecord(String machine, String entityId, String from, String to, String trigger, long epoch,
        long logIndex, long atMs) {
}
