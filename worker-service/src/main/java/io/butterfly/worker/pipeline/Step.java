package io.butterfly.worker.pipeline;

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
 */
public record Step(String taskId, int step, long epoch, List<Slice> sequences, EncodedInput input,
                   List<Endpoint> downstream, Endpoint replyTo, List<StageTiming> timings) {

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
     */
    public record Slice(String sequenceId, int position, int numTokens, int reservePositions,
                        Map<String, String> traceContext, boolean skipLogits, boolean greedy, int greedyAlternatives) {
    }
}
