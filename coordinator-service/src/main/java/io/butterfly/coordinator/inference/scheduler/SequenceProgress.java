package io.butterfly.coordinator.inference.scheduler;

/**
 * How far one sequence is, as the scheduler sees it: the positions in the stages' KV caches and whether a micro-batch
 * carries it now.
 */
public final class SequenceProgress {

    private final String id;
    private final int promptLength;
    private final int maxTokens;
    private int computed;
    private boolean inFlight;

    /** @param maxTokens the most tokens it may generate: with the prompt, the positions its KV caches may reach */
    public SequenceProgress(String id, int promptLength, int maxTokens) {
        if (promptLength < 1 || maxTokens < 1) {
            throw new IllegalArgumentException("a sequence needs a prompt and at least one token to generate");
        }
        this.id = id;
        this.promptLength = promptLength;
        this.maxTokens = maxTokens;
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

    /** Positions in the stages' KV caches. */
    public int computed() {
        return computed;
    }

    public boolean prefilling() {
        return computed < promptLength;
    }

    public boolean inFlight() {
        return inFlight;
    }

    /** The tokens its next step feeds: the rest of the prompt up to the next chunk boundary, or one decode. */
    int nextChunk(int chunkTokens) {
        if (!prefilling()) {
            return 1;
        }
        int boundary = (computed / chunkTokens + 1) * chunkTokens;
        return Math.min(promptLength, boundary) - computed;
    }

    void startStep() {
        inFlight = true;
    }

    /** A step carrying {@code tokens} of it came back (0: it failed, nothing was cached). */
    void finishStep(int tokens) {
        inFlight = false;
        computed += tokens;
    }
}
