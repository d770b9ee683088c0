package io.butterfly.coordinator.inference.engine;

import java.util.List;
import java.util.Map;

/**
 * One pipeline step of a micro-batch: each sequence's new tokens, packed in batch order.
 *
 * @param batchId this replica's number for the micro-batch: its outcome comes back under it
 * @param epoch   the assignment the sequences run on: a stage of another epoch refuses the step
 * @param tokens  every slice's tokens, concatenated in slice order
 */
public record StepInput(long batchId, long epoch, List<Slice> sequences, long[] tokens) {

    public StepInput {
        sequences = List.copyOf(sequences);
    }

    /**
     * @param position         positions of the sequence already in the stages' KV caches
     * @param reservePositions the positions every stage sizes the sequence's KV cache for at its first step
     * @param traceContext     the trace context of the step's span for this sequence's request (empty: not traced)
     * @param skipLogits       no token is sampled from this step for it (a prompt chunk before its last, a replayed
     *                         token): the last stage computes and returns no logits row for it
     * @param greedyAlternatives for a greedy sequence, how many of the most likely tokens it reports (its logprobs):
     *                         the last stage returns a summary of its row ({@code GreedyChoice}); -1: the whole row
     * @param layerHashes      each stage returns the hash of each of its layers' output for the step (per-layer
     *                         snapshots, asked by an admin request)
     */
    public record Slice(String sequenceId, int position, int numTokens, int reservePositions,
                        Map<String, String> traceContext, boolean skipLogits, int greedyAlternatives,
                        boolean layerHashes) {

        public Slice {
            traceContext = Map.copyOf(traceContext);
        }

        /** A slice that asks for no per-layer hashes. */
        public Slice(String sequenceId, int position, int numTokens, int reservePositions,
                     Map<String, String> traceContext, boolean skipLogits, int greedyAlternatives) {
            this(sequenceId, position, numTokens, reservePositions, traceContext, skipLogits, greedyAlternatives, false);
        }

        /** An untraced slice whose whole logits row is wanted. */
        public Slice(String sequenceId, int position, int numTokens, int reservePositions) {
            this(sequenceId, position, numTokens, reservePositions, Map.of(), false, -1);
        }
    }

    /** How many logits rows the last stage returns: one per slice that does not skip them, in slice order. */
    public int logitRows() {
        return (int) sequences.stream().filter(s -> !s.skipLogits()).count();
    }
}
