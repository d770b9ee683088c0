package io.butterfly.coordinator.statemachine;

/**
 * A change refused in the current state: a transition not in a machine's table (naming the machine, both states and,
 * if listed as forbidden, the spec's reason), or a command the reducer refuses (a stale epoch, an unknown node or
 * task). The state is left unchanged; callers map it to their own error surface.
 */
public class IllegalTransitionException extends RuntimeException {

    private final String machine;
    private final String from;
    private final String to;
    private final String reason;

    /** A transition of {@code machine} its table does not hold; {@code reason} when it lists it as forbidden. */
    public IllegalTransitionException(String machine, Enum<?> from, Enum<?> to, String reason) {
        this(machine + ": illegal transition " + from + " -> " + to
                + (reason == null ? " (not in the transition table)" : " (forbidden: " + reason + ")"),
                machine, from.name(), to.name(), reason);
    }

    /** A command refused for a reason of its own (no machine's table names it). */
    public IllegalTransitionException(String message) {
        this(message, null, null, null, null);
    }

    private IllegalTransitionException(String message, String machine, String from, String to, String reason) {
        super(message);
        this.machine = machine;
        this.from = from;
        this.to = to;
        this.reason = reason;
    }

    /** The same refusal, saying which command asked for it. */
    public IllegalTransitionException on(String command) {
        return new IllegalTransitionException(getMessage() + " on " + command, machine, from, to, reason);
    }

    /** The machine whose table refused it; null for a command refused for a reason of its own. */
    public String machine() {
        return machine;
    }

    public String from() {
        return from;
    }

    public String to() {
        return to;
    }

    /** The spec's reason for a listed forbidden transition; null when the pair is merely absent from the table. */
    public String reason() {
        return reason;
    }
}
