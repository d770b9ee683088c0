package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.inference.engine.StepResult;
import io.butterfly.coordinator.inference.engine.StepInput;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.cluster.NodeInfo;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A pipeline whose model is a sequence's whole history: it keeps each sequence's tokens by position as stages keep
 * their KV caches, refuses a step that starts past where the sequence's cache ends (as a stage does), answers a step
 * from an earlier position that feeds the tokens it was fed and wants no logits without computing it (as a stage that
 * kept its cache answers a replay), feeds a step with other tokens anew from its position, and answers logits drawn
 * from a hash of every token so far, so a replay that feeds a wrong history gives other tokens. It notes every slice it
 * ran, in order. Taken {@link #down}, its steps fail UNAVAILABLE and it loses every cache, as a pipeline does whose
 * stage's process died (back up, it refuses the lost sequences' steps but from position 0, as a restarted stage
 * does); unless it {@link #keepsCaches}, as the stages of a pipeline that lost no cache (a stage that failed before
 * it computed anything, a pause for memory).
 * Answers come on another thread, in the order steps arrived.
 */
final class HistoryPipeline implements Pipeline, AutoCloseable {

    private final int vocab;
    private final int endOfSequence;
    private final Map<String, List<Long>> caches = new HashMap<>();
    /** Sequences whose caches went down with the pipeline: a step of theirs is refused, as a restarted stage does. */
    private final java.util.Set<String> lost = new java.util.HashSet<>();
    /** Every slice a step ran (or refused for a conflict), in order. */
    final List<StepInput.Slice> ran = new CopyOnWriteArrayList<>();
    /** Steps refused because they did not start where the cache ended: a replay cut wrongly, never expected. */
    final List<String> conflicts = new CopyOnWriteArrayList<>();
    final List<String> released = new CopyOnWriteArrayList<>();
    private final ExecutorService stages = Executors.newSingleThreadExecutor();
    volatile boolean down;
    volatile boolean keepsCaches;
    /** Tokens of steps answered from a cache (replayed), not computed. */
    final java.util.concurrent.atomic.AtomicInteger answered = new java.util.concurrent.atomic.AtomicInteger();

    HistoryPipeline(int vocab, int endOfSequence) {
        this.vocab = vocab;
        this.endOfSequence = endOfSequence;
    }

    @Override
    public Route route(List<NodeInfo> stages) {
        return new Route() {
        };
    }

    @Override
    public CompletableFuture<StepResult> submit(Route route, StepInput input) {
        return CompletableFuture.supplyAsync(() -> run(input), stages);
    }

    private synchronized StepResult run(StepInput input) {
        if (down) {
            if (!keepsCaches) {
                lost.addAll(caches.keySet());
                caches.clear();
            }
            throw new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE, "stage w2 is gone");
        }
        float[] logits = new float[input.logitRows() * vocab];
        int at = 0;
        int row = 0;
        for (int i = 0; i < input.sequences().size(); i++) {
            StepInput.Slice s = input.sequences().get(i);
            ran.add(s);
            List<Long> cache = caches.computeIfAbsent(s.sequenceId(), k -> new ArrayList<>());
            if (s.position() > cache.size() && lost.contains(s.sequenceId())) {
                throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION, "sequence '"
                        + s.sequenceId() + "' starts at position " + s.position() + " but 0 positions are cached");
            }
            if (s.position() > cache.size()) {
                conflicts.add(s.sequenceId() + " at " + s.position() + " with " + cache.size() + " cached");
                throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL, "conflict: " + conflicts);
            }
            lost.remove(s.sequenceId());
            List<Long> fed = new ArrayList<>();
            for (int t = 0; t < s.numTokens(); t++) {
                fed.add(input.tokens()[at + t]);
            }
            at += s.numTokens();
            int end = s.position() + s.numTokens();
            if (s.skipLogits() && end <= cache.size() && cache.subList(s.position(), end).equals(fed)) {
                answered.addAndGet(s.numTokens());
                continue;
            }
            cache.subList(s.position(), cache.size()).clear();
            cache.addAll(fed);
            if (s.skipLogits()) {
                continue; // the last stage returns no row for it
            }
            SplittableRandom draws = new SplittableRandom(cache.hashCode());
            for (int v = 0; v < vocab; v++) {
                logits[row * vocab + v] = (float) (draws.nextDouble() * 4);
            }
            logits[row * vocab + endOfSequence] = Float.NEGATIVE_INFINITY; // generations run to max_tokens
            row++;
        }
        return ScriptedPipeline.answer(logits, input.logitRows(), vocab);
    }

    @Override
    public void abortThrough(String nodeId, String why) {
    }

    @Override
    public synchronized void release(Route route, List<String> sequenceIds) {
        released.addAll(sequenceIds);
        sequenceIds.forEach(caches::remove);
    }

    /** The (position, tokens) of each step that ran for stage sequence id {@code id}, in order. */
    List<List<Integer>> cuts(String id) {
        return ran.stream().filter(s -> s.sequenceId().equals(id))
                .map(s -> List.of(s.position(), s.numTokens())).toList();
    }

    /** The slices sent under one stage sequence id, in order. */
    List<StepInput.Slice> slices(String id) {
        return ran.stream().filter(s -> s.sequenceId().equals(id)).toList();
    }

    /** The stage sequence ids a task ran under: its own, then one per replica that took it over. */
    List<String> attempts(String taskId) {
        return ran.stream().map(StepInput.Slice::sequenceId).filter(id -> id.equals(taskId) || id.startsWith(taskId + "~"))
                .distinct().toList();
    }

    /** The slices of stage sequence id {@code id} since its last step from position 0 (its last replay). */
    List<StepInput.Slice> lastRun(String id) {
        List<StepInput.Slice> all = slices(id);
        int start = 0;
        for (int i = 0; i < all.size(); i++) {
            if (all.get(i).position() == 0) {
                start = i;
            }
        }
        return all.subList(start, all.size());
    }

    /** How many times the steps of stage sequence id {@code id} started from position 0: 1, and one per replay. */
    long runs(String id) {
        return slices(id).stream().filter(s -> s.position() == 0).count();
    }

    @Override
    public void close() {
        stages.shutdownNow();
    }
}
