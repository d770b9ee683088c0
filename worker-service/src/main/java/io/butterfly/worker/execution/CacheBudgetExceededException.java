package io.butterfly.worker.execution;

/**
 * A step whose KV cache growth would take this stage's caches past their memory budget. Nothing was cached
 * or grown for it; the step can succeed once other sequences are released (RESOURCE_EXHAUSTED, retry later).
 */
public final class CacheBudgetExceededException extends RuntimeException {

    public CacheBudgetExceededException(String message) {
        super(message);
    }
}
