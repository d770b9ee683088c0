package io.butterfly.coordinator.inference.engine;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Chooses the pipeline a new request runs on (docs/scale-out.md, "Routing"), as SGLang's cache-aware router does: the
 * best score of the longest prompt prefix already cached on the pipeline's first stage, its free KV cache and its queue
 * depth. Which prefixes a first stage holds is approximated by the prompts this router sent there: each prompt's full
 * blocks, hashed as a chain (a block's hash covers every token before it, as the stages' prefix caches key them), are
 * remembered per pipeline, the least recently used forgotten beyond the stage's capacity. Pure (no clock, no I/O);
 * one lock, held for a hash walk. A request's sequence stays on the pipeline chosen for it.
 */
public final class PipelineRouter {

    /**
     * A fully cached prompt is worth this much; a queue one mean queue longer than another's costs about as much. The
     * queue is weighed against the mean over the serving pipelines, not against the total: against the total, a
     * pipeline's share shrinks as pipelines are added, and with 33 pipelines and 8 shared system prompts the prefix
     * outweighed any queue, so 8 pipelines took every request (`ServingSimulation`: 0.49 of 33 times one pipeline's
     * tokens/s; 1.0 weighed against the mean).
     */
    static final double PREFIX_WEIGHT = 1.0;
    static final double QUEUE_WEIGHT = 1.0;
    /** Free KV cache breaks near-ties: a pipeline whose caches are full would only queue the request. */
    static final double KV_WEIGHT = 0.5;

    /**
     * What the router knows of one pipeline when a request arrives.
     *
     * @param queued  sequences running or waiting on it
     * @param freeKv  the free share (0..1) of the fullest stage's KV budget
     * @param serving whether it takes steps now; a pipeline that does not is never chosen
     */
    public record Load(int queued, double freeKv, boolean serving) {
    }

    private final int blockTokens;
    private final int blocksPerPipeline;
    private final List<Map<Long, Boolean>> cached = new ArrayList<>();

    /**
     * @param blockTokens       tokens per prefix block (the stages' prefix-cache block size)
     * @param blocksPerPipeline blocks remembered per pipeline (about what its first stage's cache holds)
     */
    public PipelineRouter(int blockTokens, int blocksPerPipeline) {
        if (blockTokens < 1 || blocksPerPipeline < 1) {
            throw new IllegalArgumentException("blockTokens and blocksPerPipeline must be positive");
        }
        this.blockTokens = blockTokens;
        this.blocksPerPipeline = blocksPerPipeline;
    }

    /**
     * The pipeline (an index of {@code pipelines}) for a new request with {@code prompt}, whose blocks are then
     * remembered there; -1 when none serves. Ties go to the lower index.
     */
    public synchronized int route(long[] prompt, List<Load> pipelines) {
        int serving = (int) pipelines.stream().filter(Load::serving).count();
        double meanQueued = serving == 0 ? 0 : (double) pipelines.stream().filter(Load::serving)
                .mapToInt(Load::queued).sum() / serving;
        int best = -1;
        double bestScore = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < pipelines.size(); i++) {
            Load p = pipelines.get(i);
            if (!p.serving()) {
                continue;
            }
            double score = score(cachedPrefixTokens(i, prompt), prompt.length, p, meanQueued);
            if (score > bestScore) {
                best = i;
                bestScore = score;
            }
        }
        if (best >= 0) {
            remember(best, prompt);
        }
        return best;
    }

    /** A pipeline's score for a prompt of {@code promptTokens} of which {@code cachedTokens} are cached there. */
    static double score(int cachedTokens, int promptTokens, Load p, double meanQueued) {
        double prefix = promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
        double queue = p.queued() / (1 + meanQueued);
        return PREFIX_WEIGHT * prefix + KV_WEIGHT * Math.max(0, Math.min(1, p.freeKv())) - QUEUE_WEIGHT * queue;
    }

    /** The longest prefix of {@code prompt}, in whole blocks' tokens, this router sent to {@code pipeline} lately. */
    public synchronized int cachedPrefixTokens(int pipeline, long[] prompt) {
        if (pipeline >= cached.size()) {
            return 0;
        }
        Map<Long, Boolean> blocks = cached.get(pipeline);
        long[] hashes = blockHashes(prompt);
        int n = 0;
        while (n < hashes.length && blocks.containsKey(hashes[n])) {
            n++;
        }
        return n * blockTokens;
    }

    /** The pipeline was planned anew (its first stage may have changed): nothing is known cached there any more. */
    public synchronized void forget(int pipeline) {
        if (pipeline < cached.size()) {
            cached.get(pipeline).clear();
        }
    }

    private void remember(int pipeline, long[] prompt) {
        while (cached.size() <= pipeline) {
            cached.add(new LinkedHashMap<>(16, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
                    return size() > blocksPerPipeline;
                }
            });
        }
        Map<Long, Boolean> blocks = cached.get(pipeline);
        for (long h : blockHashes(prompt)) {
            blocks.put(h, Boolean.TRUE);
        }
    }

    /** The chain hash of each full block of {@code prompt} ({@link PromptBlocks}). */
    private long[] blockHashes(long[] prompt) {
        return PromptBlocks.chain(prompt, blockTokens, prompt.length / blockTokens);
    }
}
