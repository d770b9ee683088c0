package io.butterfly.worker.pipeline;

import io.butterfly.common.verify.PrecisionContract;

/**
 * What one stage computed for a step (docs/verified-execution.md): per sequence, in batch order, the XXH64 of its
 * output rows (hidden states), or on the last stage of its logits row (0: no row, the sequence skips logits).
 */
public record StageHashes(String nodeId, PrecisionContract contract, long[] outputHashes) {
}
