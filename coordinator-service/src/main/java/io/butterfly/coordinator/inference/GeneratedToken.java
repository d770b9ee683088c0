package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import java.util.List;

/**
 * One token of a generation, as soon as it is chosen (streaming).
 *
 * @param taskId      the task it belongs to
 * @param index       0 for the first generated token
 * @param tokenId     the chosen id
 * @param text        the text this token settles (see {@link IncrementalText}): empty while it ends inside a
 *                    character, which a later token then completes; the last token's carries all the rest, so the
 *                    tokens' texts join to the generation's text
 * @param logprob     its log-probability
 * @param topLogprobs the step's most likely tokens (empty unless asked for)
 */
public record GeneratedToken(String taskId, int index, long tokenId, String text, double logprob,
                             List<TokenLogprob> topLogprobs) {
}
