package io.butterfly.coordinator.inference;

/** Told each token of a running generation as it is chosen; throwing ends the task there, as failed. */
@FunctionalInterface
public interface TokenListener {

    void onToken(GeneratedToken token);

    /**
     * {@code listener} told only the tokens after {@code afterIndex}: a client that resumes has those up to it, and a
     * replica that took its task over may have fewer recorded, so it generates some of them again.
     */
    static TokenListener after(int afterIndex, TokenListener listener) {
        return listener == null ? null : token -> {
            if (token.index() > afterIndex) {
                listener.onToken(token);
            }
        };
    }
}
