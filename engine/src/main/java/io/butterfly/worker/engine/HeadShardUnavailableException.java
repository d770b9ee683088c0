package io.butterfly.worker.engine;

/** A head shard did not answer for a step's layer: the step fails, to be retried (a retry computes the same). */
public final class HeadShardUnavailableException extends RuntimeException {

    private final int shard;

    public HeadShardUnavailableException(int shard, int layer, Throwable cause) {
        super("head shard " + shard + " did not answer for layer " + layer + ": "
                + (cause == null ? "" : cause.getMessage()), cause);
        this.shard = shard;
    }

    /** The shard's index: its subtree of the slice tree. */
    public int shard() {
        return shard;
    }
}
