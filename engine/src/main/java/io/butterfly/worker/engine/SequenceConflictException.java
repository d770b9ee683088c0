package io.butterfly.worker.engine;

/**
 * A step that does not fit what this stage holds for its sequence: a position other than the cached length
 * (out of order, duplicated, or the sequence was released meanwhile), or an executor already closed by a
 * repartition. The step itself may be well formed: this is a state conflict, answered FAILED_PRECONDITION.
 */
public final class SequenceConflictException extends RuntimeException {

    public SequenceConflictException(String message) {
        super(message);
    }
}
