package io.butterfly.coordinator.model;

/**
 * A conversation the chat template did not render: refused by the template itself ({@code raise_exception}: roles
 * that do not alternate, a system message it does not take; the client's to fix), or the template failed (the
 * model's fault: syntax the engine does not know, a limit of the sandbox reached).
 */
public class ChatTemplateException extends RuntimeException {

    private final boolean refused;

    private ChatTemplateException(String message, boolean refused, Throwable cause) {
        super(message, cause);
        this.refused = refused;
    }

    /** The template called {@code raise_exception(message)}. */
    public static ChatTemplateException refused(String message) {
        return new ChatTemplateException(message, true, null);
    }

    public static ChatTemplateException failed(String message, Throwable cause) {
        return new ChatTemplateException(message, false, cause);
    }

    /** Whether the template refused the conversation (rather than failing on it). */
    public boolean refused() {
        return refused;
    }
}
