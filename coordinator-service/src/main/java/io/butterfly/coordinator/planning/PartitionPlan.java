package io.butterfly.coordinator.planning;

import java.util.List;

/**
 * The stages of a pipeline in execution order. The constructor checks the invariants every consumer
 * relies on: ranges are contiguous from layer 0, each layer appears once, the first stage holds the
 * embedding and the last the head (and no other stage does).
 *
 * @param stages stages in pipeline order
 */
public record PartitionPlan(List<StageAssignment> stages) {

    public PartitionPlan {
        stages = List.copyOf(stages);
        if (stages.isEmpty()) {
            throw new IllegalArgumentException("a plan needs at least one stage");
        }
        int next = 0;
        for (int i = 0; i < stages.size(); i++) {
            StageAssignment s = stages.get(i);
            if (s.layerStart() != next) {
                throw new IllegalArgumentException("stage " + i + " (" + s.nodeId() + ") starts at layer "
                        + s.layerStart() + ", expected " + next);
            }
            if (s.hasEmbedding() != (i == 0)) {
                throw new IllegalArgumentException("only the first stage holds the embedding (stage " + i + ")");
            }
            if (s.hasHead() != (i == stages.size() - 1)) {
                throw new IllegalArgumentException("only the last stage holds the head (stage " + i + ")");
            }
            next = s.layerEnd();
        }
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (StageAssignment s : stages) {
            for (String id : s.holders()) {
                if (!seen.add(id)) {
                    throw new IllegalArgumentException("worker " + id + " appears in two stages");
                }
            }
        }
    }

    /** Total number of layers covered, i.e. the model's layer count. */
    public int numLayers() {
        return stages.get(stages.size() - 1).layerEnd();
    }

    /** Every worker the plan gives a part: the stages' workers in pipeline order, then the expert holders. */
    public List<String> holders() {
        List<String> out = new java.util.ArrayList<>(pipeline());
        stages.forEach(s -> out.addAll(s.expertHolders()));
        return out;
    }

    /** Worker ids in pipeline order. */
    public List<String> pipeline() {
        return stages.stream().map(StageAssignment::nodeId).toList();
    }
}
