package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import java.util.List;
import java.util.Map;

/**
 * A finished generation.
 *
 * @param taskId          task id (see /api/v1/tasks)
 * @param modelId         served model
 * @param promptTokenIds  prompt as token ids
 * @param tokenIds        generated token ids
 * @param text            generated text
 * @param finishReason    "stop" (an end-of-sequence token or a stop string) or "length"
 * @param tokenLogprobs   log-probability of each generated token
 * @param topLogprobs     per step, the top-k log-probabilities (empty lists unless asked)
 * @param timeToFirstTokenMs prefill latency
 * @param decodeTokensPerSecond decode throughput after the first token
 * @param totalMs         wall time
 * @param stageComputeMs  compute time per pipeline stage, summed over steps
 * @param transportMs     pipeline time outside every stage (transfer between processes, scheduling), summed over steps
 * @param pipelineMs      wall time of the pipeline round trips seen by the coordinator (compute + transport)
 * @param samplingMs      time the coordinator spent decoding logits and sampling
 */
public record GenerationResult(String taskId, String modelId, List<Long> promptTokenIds, List<Long> tokenIds,
                               String text, String finishReason, List<Double> tokenLogprobs,
                               List<List<TokenLogprob>> topLogprobs, double timeToFirstTokenMs,
                               double decodeTokensPerSecond, double totalMs, Map<String, Double> stageComputeMs,
                               double transportMs,
                               double pipelineMs, double samplingMs) {
}
