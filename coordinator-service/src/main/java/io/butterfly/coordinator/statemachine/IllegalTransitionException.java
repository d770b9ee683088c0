package io.butterfly.coordinator.statemachine;

/** A transition not in a machine's table; names the machine, both states and, if listed as forbidden, the reason. */
public class IllegalTransitionException extends RuntimeException {

    private final String machine;
    private final String from;
    private final String to;
    private final String reason;

    public IllegalTransitionException(String machine, Enum<?> from, Enum<?> to, String reason) {
        super(machine + ": illegal transition " + from + " -> " + to
                + (reason == null ? " (not in the transition table)" : " (forbidden: " + reason + ")"));
        this.machine = machine;
        this.from = from.name();
        this.to = to.name();
        this.reason = reason;
    }

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
