package io.butterfly.worker.pipeline;

import io.butterfly.common.verify.PrecisionContract;
import io.butterfly.common.verify.TensorMetadata;
import io.butterfly.worker.cluster.Endpoint;
import java.util.List;
import java.util.Map;

/**
 * One pipeline step as it reaches this stage, for a packed batch of sequences. Its sequences and input are as
 * they arrived: {@link PipelineStage} checks them, in the order a refusal must name the first problem.
 *
 * @param sequences  each sequence's part of the batch, in batch order
 * @param input      token ids (first stage) or the previous stage's hidden states
 * @param downstream the stages after this one, in pipeline order (none on the last stage)
 * @param replyTo    the coordinator replica waiting for the step's outcome; null if the step names none
 * @param timings    of the stages the step passed so far, in pipeline order
 * @param envelope   under which contract the input was computed and what it is declared to be; null: the sender
 *                   stated none (refused)
 * @param hashes     what the stages the step passed so far computed, in pipeline order
 */
public record Step(String taskId, int step, long epoch, List<Slice> sequences, EncodedInput input,
                   List<Endpoint> downstream, Endpoint replyTo, List<StageTiming> timings, Envelope envelope,
                   List<StageHashes> hashes) {

    /** A step whose sender stated no envelope. */
    public Step(String taskId, int step, long epoch, List<Slice> sequences, EncodedInput input,
                List<Endpoint> downstream, Endpoint replyTo, List<StageTiming> timings) {
        this(taskId, step, epoch, sequences, input, downstream, replyTo, timings, null, List.of());
    }

    /**
     * The spec's phase envelope (docs/verified-execution.md).
     *
     * @param contract the contract the input was computed under; null for token ids from the coordinator
     * @param input    what the sender declares the input tensor to be; null if it declares nothing (refused)
     */
    public record Envelope(PrecisionContract contract, TensorMetadata input) {
    }

    /**
     * One sequence's part of the batch, as sent.
     *
     * @param position         tokens already in its KV cache (the position of its first new token)
     * @param reservePositions positions it may reach, counted against the cache budget from its first step
     * @param traceContext     the trace context of the coordinator's span of this step for the sequence's request,
     *                         passed on unchanged (empty: the request is not traced)
     * @param skipLogits       nothing is sampled from this step for it: the last stage computes no logits row for it
     * @param greedy           it decodes greedily: the last stage sends a summary of its logits row, not the row
     * @param greedyAlternatives how many of the most likely tokens the summary lists (the request's logprobs)
     * @param inputHash        XXH64 of its rows of the input, as the sender computed them
     * @param layerHashes      each stage returns the hash of every layer's output for this step (per-layer snapshots)
     */
    public record Slice(String sequenceId, int position, int numTokens, int reservePositions,
                        Map<String, String> traceContext, boolean skipLogits, boolean greedy, int greedyAlternatives,
                        long inputHash, boolean layerHashes) {

        /** A slice that asks for no per-layer hashes. */
        public Slice(String sequenceId, int position, int numTokens, int reservePositions,
                     Map<String, String> traceContext, boolean skipLogits, boolean greedy, int greedyAlternatives,
                     long inputHash) {
            this(sequenceId, position, numTokens, reservePositions, traceContext, skipLogits, greedy,
                    greedyAlternatives, inputHash, false);
        }

        /** A slice whose sender stated no input hash (0). */
        public Slice(String sequenceId, int position, int numTokens, int reservePositions,
                     Map<String, String> traceContext, boolean skipLogits, boolean greedy, int greedyAlternatives) {
            this(sequenceId, position, numTokens, reservePositions, traceContext, skipLogits, greedy,
                    greedyAlternatives, 0);
        }
    }
}
