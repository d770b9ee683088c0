package io.butterfly.coordinator.inference;

/** Told each token of a running generation as it is chosen; throwing ends the task there, as failed. */
@FunctionalInterface
public interface TokenListener {

    void onToken(GeneratedToken token);
}
