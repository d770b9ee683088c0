package io.butterfly.worker.engine;

/**
 * A step whose KV cache would take this stage's caches past their memory budget. Nothing was cached or grown
 * for it. Usually the step can succeed once other sequences are released (retry later); when the sequence
 * alone needs more than the whole budget it never can ({@link #neverFits()}).
 */
public final class CacheBudgetExceededException extends RuntimeException {

    private final boolean neverFits;

    public CacheBudgetExceededException(String message, boolean neverFits) {
        super(message);
        this.neverFits = neverFits;
    }

    /** Whether the sequence alone needs more than the whole budget: retrying cannot help. */
    public boolean neverFits() {
        return neverFits;
    }
}
