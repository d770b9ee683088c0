package io.butterfly.coordinator.config;

import io.butterfly.coordinator.inference.engine.SchedulerSettings;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How this replica's engine batches (names after vLLM's where it has one).
 *
 * @param maxNumSeqs             requests running at once, each holding KV cache on every stage; more wait
 * @param maxNumBatchedTokens    tokens one micro-batch carries: the running decodes (one each) and prompt chunks
 * @param prefillChunkTokens     prompts are fed in chunks ending at multiples of this: a long prompt delays the
 *                               running decodes by at most one chunk (on CPU, a 256-token chunk of the ~100M benchmark
 *                               model takes about a second)
 * @param maxWaiting             requests queued to run; one more is refused with 429 and Retry-After
 * @param microBatchesInFlight   micro-batches in the pipeline at once, so that every stage computes while the others
 *                               do: 0 = one per pipeline stage, 1 = one at a time
 * @param recoveryTimeout        how long a generation paused by a failed stage waits for the pipeline to serve again
 *                               (it then fails with the error that paused it), and how long a task whose client or
 *                               coordinator went away stays resumable by a client that comes back
 * @param maxRunningPerKey       requests of one API key running at once (a quarter of max-num-seqs by default): its
 *                               others wait while other keys' start, keys taking turns
 * @param maxWaitingPerKey       requests of one API key waiting; one more is refused with 429 and Retry-After
 * @param tokensPerMinutePerKey  tokens (prompt and generated) one API key may spend a minute; past it, 429 with the
 *                               seconds until its bucket refills; 0: no limit
 */
@ConfigurationProperties("butterfly.coordinator.engine")
public record EngineProperties(
        @DefaultValue("64") int maxNumSeqs,
        @DefaultValue("512") int maxNumBatchedTokens,
        @DefaultValue("256") int prefillChunkTokens,
        @DefaultValue("256") int maxWaiting,
        @DefaultValue("0") int microBatchesInFlight,
        @DefaultValue("60s") Duration recoveryTimeout,
        @DefaultValue("16") int maxRunningPerKey,
        @DefaultValue("32") int maxWaitingPerKey,
        @DefaultValue("100000") long tokensPerMinutePerKey) {

    public SchedulerSettings scheduler() {
        return new SchedulerSettings(maxNumSeqs, maxNumBatchedTokens, prefillChunkTokens, maxWaiting,
                microBatchesInFlight, maxRunningPerKey, maxWaitingPerKey);
    }
}
