package io.butterfly.coordinator.inference.scheduler;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Chooses what steps together (vLLM's scheduler, in the small): each micro-batch carries the decodes of running
 * sequences and prompt chunks, under a token budget, first come first served.
 *
 * <p>Running sequences come first, oldest first: their decodes, then the chunks of prompts they are still feeding.
 * Waiting sequences start in arrival order while there is room (sequences, and KV cache on every stage); one that
 * does not fit yet keeps the ones behind it waiting too. With several micro-batches in flight, a micro-batch takes at
 * most its share of the running decodes, so the running sequences spread over the micro-batches and every stage has
 * work.
 *
 * <p>A sequence whose step failed for want of a stage is paused: it keeps its KV reservation but is not scheduled until
 * it is resumed, and then replays its history (see {@link SequenceProgress}). Not thread-safe: its
 * engine owns it.
 */
public final class Scheduler {

    private final SchedulerSettings settings;
    private final Deque<SequenceProgress> waiting = new ArrayDeque<>();
    private final Set<SequenceProgress> running = new LinkedHashSet<>();
    /** Running sequences waiting to be resumed; they keep their KV reservations. */
    private final Set<SequenceProgress> paused = new LinkedHashSet<>();
    private KvBudgets budgets = KvBudgets.unlimited();
    private int microBatches;
    private long nextBatchId = 1;

    public Scheduler(SchedulerSettings settings) {
        this.settings = settings;
        this.microBatches = settings.microBatchesFor(1);
    }

    public SchedulerSettings settings() {
        return settings;
    }

    /**
     * The pipeline from now on: its stages' budgets (what running sequences hold is counted against them again) and
     * how many micro-batches it takes at once.
     */
    public void pipeline(KvBudgets next, int stages) {
        running.forEach(s -> next.reserve(s.reservePositions()));
        paused.forEach(s -> next.reserve(s.reservePositions()));
        budgets = next;
        microBatches = settings.microBatchesFor(stages);
    }

    /** Micro-batches the pipeline takes at once. */
    public int microBatches() {
        return microBatches;
    }

    public KvBudgets budgets() {
        return budgets;
    }

    /** Queues a sequence; refused when {@code max-waiting} wait already. */
    public void add(SequenceProgress s) {
        if (waiting.size() >= settings.maxWaiting()) {
            throw new QueueFullException(waiting.size() + " requests are waiting, the most this coordinator queues"
                    + " (butterfly.coordinator.engine.max-waiting); retry shortly");
        }
        waiting.add(s);
    }

    /** The next micro-batch of sequences not in flight; null when nothing can step now. */
    public MicroBatch next() {
        List<Chunk> chunks = new ArrayList<>();
        int budget = settings.maxNumBatchedTokens();
        int decodes = 0;
        int decodeShare = (running.size() + microBatches - 1) / microBatches;
        // Prompts are fed in order: once one's chunk does not fit, none behind it goes first.
        boolean prefillBlocked = false;
        for (SequenceProgress s : running) {
            if (!s.canStep()) {
                continue;
            }
            if (s.prefilling()) {
                int n = s.nextChunk(settings.prefillChunkTokens());
                if (!prefillBlocked && n <= budget) {
                    chunks.add(chunk(s, n));
                    budget -= n;
                } else {
                    prefillBlocked = true;
                }
            } else if (decodes < decodeShare && budget > 0) {
                chunks.add(chunk(s, 1));
                budget--;
                decodes++;
            }
        }
        while (!prefillBlocked && !waiting.isEmpty() && running.size() + paused.size() < settings.maxNumSeqs()
                && budgets.fits(waiting.peek().reservePositions())) {
            SequenceProgress s = waiting.poll();
            budgets.reserve(s.reservePositions());
            running.add(s);
            int n = s.nextChunk(settings.prefillChunkTokens());
            if (n <= budget) {
                chunks.add(chunk(s, n));
                budget -= n;
            } else {
                prefillBlocked = true; // it starts first next time
            }
        }
        if (chunks.isEmpty()) {
            return null;
        }
        chunks.forEach(c -> c.sequence().startStep(c.numTokens()));
        return new MicroBatch(nextBatchId++, chunks);
    }

    private static Chunk chunk(SequenceProgress s, int n) {
        return new Chunk(s, s.nextPosition(), n, s.samplesAfter(n), s.attempt());
    }

    /** A micro-batch's step is done: its sequences advance and may step again. */
    public void stepped(MicroBatch batch) {
        for (Chunk c : batch.chunks()) {
            c.sequence().finishStep(c.attempt(), c.numTokens());
        }
    }

    /** A micro-batch's step failed: its sequences have not advanced (the caller ends them or pauses them). */
    public void stepFailed(MicroBatch batch) {
        for (Chunk c : batch.chunks()) {
            c.sequence().finishStep(c.attempt(), 0);
        }
    }

    /** Stops scheduling a running sequence until {@link #resume}; it keeps its KV reservation. */
    public void pause(SequenceProgress s) {
        if (running.remove(s)) {
            paused.add(s);
            s.pause();
        }
    }

    /**
     * Schedules a paused sequence again, on a new attempt that replays its first {@code historyLength} tokens (its
     * prompt and what it generated) before it samples the next.
     */
    public void resume(SequenceProgress s, int historyLength) {
        if (!paused.remove(s)) {
            throw new IllegalStateException("sequence " + s.id() + " is not paused");
        }
        s.resume(historyLength);
        running.add(s);
    }

    /**
     * Queues a sequence that ran elsewhere (its replica is gone), to start by replaying its first
     * {@code historyLength} tokens; refused when the queue is full, as any other.
     */
    public void addResumed(SequenceProgress s, int historyLength) {
        s.resume(historyLength);
        add(s);
    }

    /** Ends a sequence, running, paused or waiting: it leaves, and the KV cache it reserved is free again. */
    public void remove(SequenceProgress s) {
        if (running.remove(s) || paused.remove(s)) {
            budgets.free(s.reservePositions());
        } else {
            waiting.remove(s);
        }
    }

    /** Sequences holding KV reservations: running, and paused (waiting to be resumed). */
    public int running() {
        return running.size() + paused.size();
    }

    public int paused() {
        return paused.size();
    }

    public int waiting() {
        return waiting.size();
    }
}
