package io.butterfly.coordinator.inference.engine;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Owns the engine's sequences and chooses what steps together (vLLM's scheduler, in the small): each micro-batch
 * carries the decodes of running sequences and prompt chunks, under a budget of the tokens the stages compute. A
 * prompt whose leading blocks every stage answered lately ({@link CachedPrefixes}, while every stage keeps a prefix
 * cache) goes in one step to the chunk boundary after them, and counts only the tokens after them: a cached
 * 1,000-token system prompt is one step, not one per chunk.
 *
 * <p>Running sequences come first, oldest first: their decodes, then the chunks of prompts they are still feeding.
 * Waiting sequences start while there is room (sequences, and KV cache on every stage), API keys taking turns
 * ({@link FairQueue}: with K keys waiting, a request starts after at most K - 1 starts of other keys once it heads its
 * key's queue, whatever their bursts) and each key running at most {@code max-running-per-key}; within a key, in
 * arrival order. Batch jobs' sequences are background work: they start only when no interactive request may, and hold
 * at most half of {@code max-num-seqs} (docs/jobs.md, priority). The one whose turn it is but does not fit yet keeps
 * the others waiting too. With several micro-batches in flight, a micro-batch takes at
 * most its share of the running decodes, so the running sequences spread over the micro-batches and every stage has
 * work.
 *
 * <p>A sequence whose step failed for want of a stage is paused: it keeps its KV reservation but is not scheduled until
 * it is resumed, and then replays its history (see {@link Sequence}). Not thread-safe but for {@link #places()}: the
 * engine's thread owns it.
 */
public final class Scheduler {

    private final SchedulerSettings settings;
    private final WaitingPlaces places;
    /** Every sequence here, in arrival order. */
    private final Map<String, Sequence> sequences = new LinkedHashMap<>();
    private final FairQueue waiting = new FairQueue();
    /** Sequences holding KV reservations, paused ones included, in the order they (re)started. */
    private final Set<Sequence> running = new LinkedHashSet<>();
    /** Running sequences of each API key (with any). */
    private final Map<String, Integer> runningByKey = new HashMap<>();
    private KvBudgets budgets = KvBudgets.unlimited();
    /** Prompt blocks every stage answered lately; consulted while every stage keeps a prefix cache. */
    private final CachedPrefixes cachedPrefixes = new CachedPrefixes();
    private java.util.function.BooleanSupplier prefixCaching = () -> false;
    private int microBatches;
    /**
     * Micro-batch ids, unique in the process: the engines of several pipelines (docs/scale-out.md) share the step
     * transport, which knows a step by its batch id.
     */
    private static final java.util.concurrent.atomic.AtomicLong BATCH_IDS = new java.util.concurrent.atomic.AtomicLong(1);

    public Scheduler(SchedulerSettings settings) {
        this.settings = settings;
        this.places = new WaitingPlaces(settings.maxWaiting(), settings.maxWaitingPerKey());
        this.microBatches = settings.microBatchesFor(1);
    }

    public SchedulerSettings settings() {
        return settings;
    }

    /** The waiting queue's places; taken on any thread, given back here. */
    public WaitingPlaces places() {
        return places;
    }

    /**
     * The pipeline from now on: its stages' budgets (what running sequences hold is counted against them again) and
     * how many micro-batches it takes at once.
     */
    public void pipeline(KvBudgets next, int stages) {
        running.forEach(s -> next.reserve(s.reservePositions()));
        budgets = next;
        cachedPrefixes.forget();
        microBatches = settings.microBatchesFor(stages);
    }

    /**
     * Whether every stage of the pipeline keeps a prefix cache now (asked at each scheduling): while so, a prompt whose
     * leading blocks the pipeline answered lately goes in one step, its budget counting only the tokens computed.
     */
    public void prefixCaching(java.util.function.BooleanSupplier everyStage) {
        prefixCaching = everyStage;
    }

    /** A stage may have lost its prefix cache (it failed, or the pipeline changed): nothing is taken as cached. */
    public void forgetCachedPrefixes() {
        cachedPrefixes.forget();
    }

    /** Micro-batches the pipeline takes at once. */
    public int microBatches() {
        return microBatches;
    }

    public KvBudgets budgets() {
        return budgets;
    }

    /** Queues a sequence; refused when {@code max-waiting} wait already. */
    public void add(Sequence s) {
        places.take(s.tenant(), 1);
        queue(s);
    }

    /** Queues a sequence whose place in the queue was taken already ({@link #places()}). */
    public void queue(Sequence s) {
        sequences.put(s.id(), s);
        waiting.add(s);
    }

    /**
     * Queues a sequence (its place taken) that ran elsewhere (its replica is gone, or its client came back here), to
     * start by replaying its history.
     */
    public void queueReplay(Sequence s, long nowNanos) {
        s.newStageId();
        s.takenOver(nowNanos);
        queue(s);
    }

    /** The sequence of task {@code id} here, or null. */
    public Sequence get(String id) {
        return sequences.get(id);
    }

    /** Every sequence here, in arrival order (a copy: the caller may end them meanwhile). */
    public List<Sequence> sequences() {
        return List.copyOf(sequences.values());
    }

    /** The next micro-batch of sequences not in flight; null when nothing can step now. */
    public MicroBatch next() {
        List<Chunk> chunks = new ArrayList<>();
        int budget = settings.maxNumBatchedTokens();
        int decodes = 0;
        int decodeShare = (running.size() + microBatches - 1) / microBatches;
        // Prompts are fed in order: once one's chunk does not fit, none behind it goes first.
        boolean prefillBlocked = false;
        boolean hits = prefixCaching.getAsBoolean();
        for (Sequence s : running) {
            if (!s.canStep() || waitsForPromptLeader(s)) {
                continue;
            }
            if (s.prefilling()) {
                int cached = hits ? cachedTokens(s) : 0;
                int n = s.nextChunk(settings.prefillChunkTokens(), cached);
                int computed = n - s.restoredBy(n, settings.prefillChunkTokens(), cached);
                if (!prefillBlocked && computed <= budget) {
                    chunks.add(chunk(s, n));
                    budget -= computed;
                } else {
                    prefillBlocked = true;
                }
            } else if (decodes < decodeShare && budget > 0) {
                chunks.add(chunk(s, 1));
                budget--;
                decodes++;
            }
        }
        while (!prefillBlocked && !waiting.isEmpty() && running.size() < settings.maxNumSeqs()) {
            // Keys take turns; one at its running cap waits. A head that does not fit the KV budgets yet keeps every
            // other waiting (it starts first once they fit): a long request is not passed over for ever.
            Sequence s = waiting.next(this::mayStartMore);
            if (s == null || !budgets.fits(s.reservePositions())) {
                break;
            }
            waiting.started(s);
            places.giveBack(s.tenant(), 1);
            budgets.reserve(s.reservePositions());
            running.add(s);
            runningByKey.merge(s.tenant(), 1, Integer::sum);
            if (waitsForPromptLeader(s)) {
                continue; // it holds its place; its prompt goes once its leader's is cached
            }
            int cached = hits ? cachedTokens(s) : 0;
            int n = s.nextChunk(settings.prefillChunkTokens(), cached);
            int computed = n - s.restoredBy(n, settings.prefillChunkTokens(), cached);
            if (computed <= budget) {
                chunks.add(chunk(s, n));
                budget -= computed;
            } else {
                prefillBlocked = true; // it starts first next time
            }
        }
        if (chunks.isEmpty()) {
            return null;
        }
        chunks.forEach(c -> c.sequence().startStep(c.numTokens()));
        return new MicroBatch(BATCH_IDS.getAndIncrement(), chunks);
    }

    /**
     * The leading tokens of {@code s}'s prompt in every stage's prefix cache, as far as this engine knows: on its first
     * attempt only (a replay feeds its history as the stages kept it).
     */
    private int cachedTokens(Sequence s) {
        return s.attempt() == 0 && s.nextPosition() < s.promptLength() ? cachedPrefixes.cachedTokens(s.promptTokens()) : 0;
    }

    /**
     * Whether a sequence that has sent nothing yet waits for the sequence with its prompt submitted before it (the
     * other choices of its request): until that one's prompt is answered on every stage, so this one's full blocks are
     * found in the stages' prefix caches and only the rest of its prompt is computed. It does not wait for one that
     * left this engine or was paused.
     */
    private boolean waitsForPromptLeader(Sequence s) {
        Sequence leader = s.promptLeader();
        return leader != null && s.unstarted() && sequences.get(leader.id()) == leader && !leader.promptSettled();
    }

    /**
     * Whether {@code key} may start one more sequence: below its running cap (requests without a key: always), and for
     * background work (batch jobs) while background sequences hold less than half of {@code max-num-seqs}, so an
     * interactive request arriving finds a free slot rather than waiting for a batch's generations to end.
     */
    private boolean mayStartMore(String key) {
        if (Sequence.background(key) && backgroundRunning() >= Math.max(1, settings.maxNumSeqs() / 2)) {
            return false;
        }
        return Sequence.ANONYMOUS.equals(key) || runningByKey.getOrDefault(key, 0) < settings.maxRunningPerKey();
    }

    private int backgroundRunning() {
        int n = 0;
        for (Map.Entry<String, Integer> e : runningByKey.entrySet()) {
            n += Sequence.background(e.getKey()) ? e.getValue() : 0;
        }
        return n;
    }

    private static Chunk chunk(Sequence s, int n) {
        return new Chunk(s, s.nextPosition(), n, s.samplesAfter(n), s.attempt());
    }

    /** A micro-batch's step is done: its sequences advance and may step again. */
    public void stepped(MicroBatch batch) {
        for (Chunk c : batch.chunks()) {
            c.sequence().finishStep(c.attempt(), c.numTokens());
            if (c.position() < c.sequence().promptLength()) { // every stage holds its prompt's blocks up to here
                cachedPrefixes.answered(c.sequence().promptTokens(), c.position() + c.numTokens());
            }
        }
    }

    /** A micro-batch's step failed: its sequences have not advanced (the caller ends them or pauses them). */
    public void stepFailed(MicroBatch batch) {
        for (Chunk c : batch.chunks()) {
            c.sequence().finishStep(c.attempt(), 0);
        }
        cachedPrefixes.forget(); // a stage may have restarted without its cache
    }

    /**
     * Stops scheduling a running sequence until {@link #resume}; it keeps its KV reservation. Answers whether this is
     * its first pause since it last generated (the one its recovery timeout counts from).
     */
    public boolean pause(Sequence s, long nowNanos, RuntimeException cause) {
        return running.contains(s) && s.pause(nowNanos, cause);
    }

    /**
     * Schedules a paused sequence again, on a new attempt that replays its history (its prompt and what it generated)
     * before it samples the next token.
     */
    public void resume(Sequence s) {
        if (!s.paused() || !running.remove(s)) {
            throw new IllegalStateException("sequence " + s.id() + " is not paused");
        }
        s.replay();
        running.add(s); // behind those that kept running, as it would start again
    }

    /** Ends a sequence, running, paused or waiting: it leaves, and the KV cache or queue place it held is free again. */
    public void remove(Sequence s) {
        if (sequences.get(s.id()) == s) {
            sequences.remove(s.id());
        }
        if (running.remove(s)) {
            budgets.free(s.reservePositions());
            runningByKey.computeIfPresent(s.tenant(), (k, n) -> n <= 1 ? null : n - 1);
        } else if (waiting.remove(s)) {
            places.giveBack(s.tenant(), 1);
        }
    }

    /** Sequences holding KV reservations: running, and paused (waiting to be resumed). */
    public int running() {
        return running.size();
    }

    /** Sequences paused, not scheduled until resumed. */
    public int paused() {
        return (int) running.stream().filter(Sequence::paused).count();
    }

    public int waiting() {
        return waiting.size();
    }
}
