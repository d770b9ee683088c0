package io.butterfly.common.api;

import java.util.List;

/**
 * One state machine as the coordinator's {@code GET /api/v1/system/machines/{machine}} answers it, for a client that
 * draws the diagram itself (the dashboard).
 *
 * @param states      every state, in the order the machine declares them
 * @param transitions its legal transitions
 * @param deviations  for the system machine, the transitions the reducer also makes; empty for the others
 */
public record StateMachineTable(String machine, String initial, List<String> states, List<Edge> transitions,
                                List<Deviation> deviations) {

    /** A legal transition and what triggers it. */
    public record Edge(String from, String to, String trigger) {
    }

    /** A transition the reducer makes beyond the table, and why. */
    public record Deviation(String from, String to, String reason) {
    }
}
