package io.butterfly.worker.engine;

/** A worker holding one of a stage's expert groups did not answer for a step's layer: the step fails, to be retried. */
public final class ExpertGroupUnavailableException extends RuntimeException {

    private final String nodeId;

    public ExpertGroupUnavailableException(String nodeId, int layer, Throwable cause) {
        super("expert group " + nodeId + " did not answer for layer " + layer + ": " + (cause == null ? "" : cause.getMessage()),
                cause);
        this.nodeId = nodeId;
    }

    /** The worker holding the group. */
    public String nodeId() {
        return nodeId;
    }
}
