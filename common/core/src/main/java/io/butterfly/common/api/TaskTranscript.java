package io.butterfly.common.api;

import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * A task's transcript as the coordinator's {@code /api/v1/tasks/{id}/transcript} answers it
 * (docs/verified-execution.md). Hashes are XXH64, 16 lowercase hex digits.
 *
 * @param replica the coordinator replica that ran the task and answers its transcript
 * @param genesis the chain's start: the hash of the prompt's token ids
 * @param digest  the chain's last link: two runs computed the same generation when their digests are equal
 * @param links   one per sampled token, in order
 * @param steps   the steps that ran for the task (its newest 4096), with what each stage computed
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record TaskTranscript(String taskId, String replica, String genesis, String digest, List<Link> links,
                             List<Step> steps) {

    /**
     * Where a run of the same request parted from a reference run, by their per-layer snapshot hashes: the first step
     * (in this transcript's order) and, in it, the first layer (in pipeline and layer order) whose hash differs.
     *
     * @param position the step's first position
     * @param nodeId   the worker that computed that layer in this run
     * @param layer    the model's layer index
     */
    public record Divergence(int position, String nodeId, int layer) {
    }

    /**
     * The first layer at which this run's per-layer hashes differ from {@code reference}'s for the same step (same
     * position and tokens), over the steps both hold layer hashes for; empty if none differs.
     */
    public java.util.Optional<Divergence> firstDivergenceFrom(TaskTranscript reference) {
        java.util.Map<String, java.util.Map<Integer, String>> theirs = new java.util.HashMap<>();
        for (Step step : reference.steps()) {
            theirs.putIfAbsent(step.position() + "+" + step.tokens(), layerHashes(step));
        }
        for (Step step : steps) {
            java.util.Map<Integer, String> other = theirs.get(step.position() + "+" + step.tokens());
            if (other == null || other.isEmpty()) {
                continue;
            }
            for (Stage stage : step.stages()) {
                for (Layer layer : stage.layers()) {
                    String expected = other.get(layer.layer());
                    if (expected != null && !expected.equals(layer.outputHash())) {
                        return java.util.Optional.of(new Divergence(step.position(), stage.nodeId(), layer.layer()));
                    }
                }
            }
        }
        return java.util.Optional.empty();
    }

    private static java.util.Map<Integer, String> layerHashes(Step step) {
        java.util.Map<Integer, String> out = new java.util.HashMap<>();
        step.stages().forEach(st -> st.layers().forEach(l -> out.put(l.layer(), l.outputHash())));
        return out;
    }

    /**
     * @param end        the positions the logits were conditioned on (prompt and tokens before)
     * @param logitsHash the last stage's hash of the logits row
     * @param link       XXH64 of the previous link, end, logits hash and token id
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Link(int end, String logitsHash, long tokenId, String link) {
    }

    /**
     * @param batch     the coordinator's micro-batch number
     * @param inputHash the hash of the step's token ids for the task
     * @param stages    in pipeline order
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Step(long batch, int position, int tokens, String inputHash, List<Stage> stages) {
    }

    /**
     * @param contract   the precision contract it computed under (weights/compute/activations)
     * @param outputHash its output rows' hash for the task (the logits row on the last stage; zeros: no row)
     * @param layers     per-layer snapshot hashes (a request with {@code layer_hashes}), in layer order; else empty,
     *                   and left out of the JSON
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Stage(String nodeId, String contract, String outputHash,
                        @com.fasterxml.jackson.annotation.JsonInclude(
                                com.fasterxml.jackson.annotation.JsonInclude.Include.NON_EMPTY) List<Layer> layers) {

        public Stage {
            layers = layers == null ? List.of() : List.copyOf(layers);
        }

        public Stage(String nodeId, String contract, String outputHash) {
            this(nodeId, contract, outputHash, List.of());
        }
    }

    /**
     * @param layer      the model's layer index
     * @param outputHash the hash of the task's rows of that layer's output for the step
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Layer(int layer, String outputHash) {
    }
}
