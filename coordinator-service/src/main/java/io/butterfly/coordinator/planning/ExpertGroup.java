package io.butterfly.coordinator.planning;

/**
 * The routed experts {@code [firstExpert, endExpert)} of every sparse layer of a stage, held by one worker
 * (docs/sharding.md, "Expert groups").
 *
 * @param nodeId      the worker holding them: for a stage's group 0 the stage's own worker
 * @param firstExpert first expert id (inclusive)
 * @param endExpert   last expert id (exclusive)
 */
public record ExpertGroup(String nodeId, int firstExpert, int endExpert) {

    public ExpertGroup {
        if (nodeId == null || nodeId.isBlank()) {
            throw new IllegalArgumentException("an expert group's nodeId must not be blank");
        }
        if (firstExpert < 0 || endExpert <= firstExpert) {
            throw new IllegalArgumentException("invalid expert range [" + firstExpert + ", " + endExpert + ") for "
                    + nodeId);
        }
    }

    public int experts() {
        return endExpert - firstExpert;
    }

    ExpertGroup on(String otherNode) {
        return new ExpertGroup(otherNode, firstExpert, endExpert);
    }
}
