package io.butterfly.common.api;

import java.util.List;

/**
 * The coordinator's {@code GET /api/v1/system/transitions}: applied transitions, newest first. Unlike the other
 * answers its field names are camelCase on the wire ({@code entityId}, {@code logIndex}, {@code atMs}), as the
 * dashboard reads them.
 */
public record TransitionHistory(List<Transition> transitions) {

    /**
     * One applied transition (docs/state-machines.md §7.2).
     *
     * @param trigger  the command that caused it
     * @param logIndex the control log's index of that command
     * @param atMs     when it was applied (epoch millis)
     */
    public record Transition(String machine, String entityId, String from, String to, String trigger, long epoch,
                             long logIndex, long atMs) {
    }
}
