package io.butterfly.coordinator.inference.scheduler;

/**
 * How far one sequence is, as the scheduler sees it: the positions in the stages' KV caches, the steps carrying it
 * now, and which attempt it is on.
 *
 * <p>A sequence feeds known tokens (its history) before it samples: first its prompt. After a pause (a stage that held
 * its KV cache failed) it starts a new attempt, which feeds its whole history, the prompt and the tokens generated so
 * far, again from position 0, cut exactly as the first time (the prompt in the same chunks, each generated token in a
 * step of its own): a stage that kept its cache answers those steps from what it sent the first time, one that lost
 * it computes the same values as it did, and the next token is the one a run without the failure chooses. A replaying sequence may have several steps in flight, one after the other (their
 * tokens are known, and the stages take them in order); otherwise at most one.
 */
public final class SequenceProgress {

    private final String id;
    private final int promptLength;
    private final int maxTokens;
    /** Positions fed from known tokens before the next one is sampled: the prompt, or on a replay all it generated. */
    private int history;
    private int attempt;
    /** Positions of this attempt the stages answered for, and those sent (answered or in flight). */
    private int computed;
    private int sent;
    private int stepsInFlight;
    private boolean paused;

    /** @param maxTokens the most tokens it may generate: with the prompt, the positions its KV caches may reach */
    public SequenceProgress(String id, int promptLength, int maxTokens) {
        if (promptLength < 1 || maxTokens < 1) {
            throw new IllegalArgumentException("a sequence needs a prompt and at least one token to generate");
        }
        this.id = id;
        this.promptLength = promptLength;
        this.maxTokens = maxTokens;
        this.history = promptLength;
    }

    public String id() {
        return id;
    }

    public int promptLength() {
        return promptLength;
    }

    /** Positions the sequence may reach: what every stage reserves KV cache for from its first chunk. */
    public int reservePositions() {
        return promptLength + maxTokens;
    }

    /** Positions in the stages' KV caches (of the current attempt). */
    public int computed() {
        return computed;
    }

    /** 0 until a pause; each resume starts a new attempt (steps of an earlier one are ignored when they come back). */
    public int attempt() {
        return attempt;
    }

    /** Whether known tokens are still to be sent (the prompt, or the history being replayed). */
    public boolean prefilling() {
        return sent < history;
    }

    /** Whether it is replaying its history after a resume. */
    public boolean replaying() {
        return attempt > 0 && computed < history;
    }

    public boolean inFlight() {
        return stepsInFlight > 0;
    }

    public boolean paused() {
        return paused;
    }

    /** Whether another step may carry it now: none does, or it replays known tokens behind the ones in flight. */
    boolean canStep() {
        return !paused && (stepsInFlight == 0 || (attempt > 0 && sent < history));
    }

    /**
     * The tokens its next step feeds: the prompt up to the next chunk boundary, or one token (a generated one being
     * replayed, or a decode).
     */
    int nextChunk(int chunkTokens) {
        if (sent >= promptLength) {
            return 1;
        }
        int boundary = (sent / chunkTokens + 1) * chunkTokens;
        return Math.min(promptLength, boundary) - sent;
    }

    /** The position its next step starts at. */
    int nextPosition() {
        return sent;
    }

    /** Whether a step of {@code n} tokens from the next position ends the known tokens, so its logits give a token. */
    boolean samplesAfter(int n) {
        return sent + n >= history;
    }

    void startStep(int tokens) {
        stepsInFlight++;
        sent += tokens;
    }

    /** A step of attempt {@code stepAttempt} carrying {@code tokens} of it came back (0: it failed, nothing was cached). */
    void finishStep(int stepAttempt, int tokens) {
        if (stepAttempt != attempt) {
            return; // a step of an attempt given up: its caches are gone with it
        }
        stepsInFlight--;
        computed += tokens;
        if (tokens == 0 && stepsInFlight == 0) {
            sent = computed; // nothing more of it is on its way: the next step goes again from here
        }
    }

    void pause() {
        paused = true;
    }

    /**
     * Starts a new attempt that feeds the first {@code historyLength} tokens again (the prompt and the tokens
     * generated so far), from position 0.
     */
    void resume(int historyLength) {
        if (historyLength < promptLength) {
            throw new IllegalArgumentException("a replay feeds at least the prompt (" + promptLength + " tokens), not "
                    + historyLength);
        }
        attempt++;
        history = historyLength;
        computed = 0;
        sent = 0;
        stepsInFlight = 0;
        paused = false;
    }
}
