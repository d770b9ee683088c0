package io.butterfly.coordinator.model;

/**
 * A conversation the chat template did not render: refused by the template itself ({@code raise_exception}: roles
 * that do not alternate, a system message it does not take; the client's to fix), past a size limit of the sandbox
 * (an output or a list too large: the conversation's size, the client's to cut), or the template failed (the model's
 * fault: syntax the engine does not know, a time or depth limit reached).
 */
public class ChatTemplateException extends RuntimeException {

    private enum Kind { REFUSED, OVER_LIMIT, FAILED }

    private final Kind kind;

    private ChatTemplateException(String message, Kind kind, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    /** The template called {@code raise_exception(message)}. */
    public static ChatTemplateException refused(String message) {
        return new ChatTemplateException(message, Kind.REFUSED, null);
    }

    /** The render grew past a size limit of the sandbox (its output, a list or a string). */
    public static ChatTemplateException overLimit(String message) {
        return new ChatTemplateException(message, Kind.OVER_LIMIT, null);
    }

    public static ChatTemplateException failed(String message, Throwable cause) {
        return new ChatTemplateException(message, Kind.FAILED, cause);
    }

    /** Whether the template refused the conversation (rather than failing on it). */
    public boolean refused() {
        return kind == Kind.REFUSED;
    }

    /** Whether the conversation made the render too large. */
    public boolean overLimit() {
        return kind == Kind.OVER_LIMIT;
    }
}
