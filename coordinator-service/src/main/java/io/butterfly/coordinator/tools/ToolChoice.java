package io.butterfly.coordinator.tools;

/**
 * OpenAI's {@code tool_choice}: whether the model may, must, or must not call a function, or which one it calls.
 *
 * @param function the function a {@link Mode#NAMED} choice calls, else null
 */
public record ToolChoice(Mode mode, String function) {

    public enum Mode {
        /** No call: the tools are not shown to the model. */
        NONE,
        /** The model answers or calls, in the format its chat template taught it; calls are parsed from its text. */
        AUTO,
        /** At least one call: the reply is constrained to a list of calls. */
        REQUIRED,
        /** A call of {@link #function}: the reply is constrained to that function's arguments. */
        NAMED
    }

    public static final ToolChoice NONE = new ToolChoice(Mode.NONE, null);
    public static final ToolChoice AUTO = new ToolChoice(Mode.AUTO, null);
    public static final ToolChoice REQUIRED = new ToolChoice(Mode.REQUIRED, null);

    /** Whether the reply is constrained to calls (their arguments by the functions' schemas). */
    public boolean constrained() {
        return mode == Mode.REQUIRED || mode == Mode.NAMED;
    }
}
