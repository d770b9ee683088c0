package io.butterfly.coordinator.inference.engine;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.inference.sampling.Sampler;
import io.butterfly.coordinator.structured.TokenConstraint;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One request in the engine, and the one place its state is: its tokens (the prompt, then those chosen), how far the
 * stages' KV caches hold them, the attempt it is on, whether it is paused, and whether it is to stop. The scheduler
 * owns it; only the engine's thread touches it. What is made of its tokens (text, listeners, the journal) is its
 * {@link SequenceOutputs}'.
 *
 * <p>A sequence feeds known tokens (its history) before it samples: first its prompt. After a pause (a stage that held
 * its KV cache failed) it starts a new attempt, which feeds its whole history, the prompt and the tokens generated so
 * far, again from position 0, cut at the prefill chunks' boundaries (each generated token in a step of its own; the
 * first attempt cut its prompt so too, but for a cached prefix fed in one step): a stage that kept its cache answers
 * those steps from what it sent the first time (any positions it holds), one that lost it computes the same values as
 * it did (every step ends at a chunk boundary, so each row computed attends over the same positions as then), and the
 * next token is the one a run without the failure chooses. A replaying
 * sequence may have several steps in flight, one after the other (their tokens are known, and the stages take them in
 * order); otherwise at most one.
 */
public final class Sequence {

    /**
     * How its next token is chosen and when it ends.
     *
     * @param ignoreEos  whether it goes on past an end-of-sequence token (to max_tokens)
     * @param constraint the grammar its tokens follow (structured output), or null: any token; its state follows the
     *                   tokens appended, so a replay of them rebuilds it
     */
    public record Decoding(Sampler sampler, ModelConfig model, boolean ignoreEos, TokenConstraint constraint) {

        public Decoding(Sampler sampler, ModelConfig model, boolean ignoreEos) {
            this(sampler, model, ignoreEos, null);
        }
    }

    /**
     * Why it waits to generate again: since when (System.nanoTime), what paused it (null: taken over from another
     * replica), and whether it replays its history already or waits for the pipeline to serve.
     */
    record Pause(long sinceNanos, RuntimeException cause, boolean replaying) {
    }

    /** The tenant of requests without an API key (no keys set): one, which per-key limits do not bind. */
    public static final String ANONYMOUS = "";
    /**
     * Tenants named so are background work, batch jobs' samples (docs/jobs.md): they start only when no interactive
     * request may start, and hold at most half the engine's sequences.
     */
    public static final String BACKGROUND_PREFIX = "job:";

    /**
     * A prompt step restoring cached blocks spans at most this many prefill chunks: were the blocks evicted meanwhile,
     * the stages compute them all in that step, and its size stays bounded.
     */
    static final int MAX_HIT_CHUNKS = 8;

    /** Whether the tenant's sequences are background work ({@link #BACKGROUND_PREFIX}). */
    public static boolean background(String tenant) {
        return tenant.startsWith(BACKGROUND_PREFIX);
    }

    private final String id;
    private final String tenant;
    private final long[] prompt;
    private final int maxTokens;
    private final Decoding decoding;
    private final SequenceOutputs outputs;
    private final Transcript transcript;
    private volatile boolean layerHashes;
    private final List<Long> generated = new ArrayList<>();
    /**
     * The stages know its KV caches by this id: the task id, kept across a pause on this replica (kept stages answer
     * its replay from their caches); a fresh one when a replica takes the task over (its former owner may still hold
     * and free caches under the old one).
     */
    private String stageId;

    /** Positions fed from known tokens before the next one is sampled: the prompt, or on a replay all it generated. */
    private int history;
    private int attempt;
    /** Positions of this attempt the stages answered for, and those sent (answered or in flight). */
    private int computed;
    private int sent;
    private int stepsInFlight;
    /** Null while it generates. */
    private Pause pause;
    /** Why it is to end at its next step (its client is gone); null while it may go on. */
    private String cancelled;
    /** Why it is to leave at its next step without ending, resumable elsewhere (its streaming client went away). */
    private String detached;
    /** The replica the task moved to (a client resumed it there): it leaves here at its next step, unrecorded. */
    private String movedTo;
    /**
     * An earlier sequence with the same prompt, submitted with it (another choice of the same request): this one's
     * prompt waits for that one's, so the stages' prefix caches hold the prompt's blocks when this one is fed; null
     * when none.
     */
    private Sequence promptLeader;

    /**
     * @param maxTokens the most tokens it may generate: with the prompt, the positions its KV caches may reach
     * @param decoding  how its tokens are chosen (null for a sequence that is only scheduled, never sampled)
     */
    /** Whose share of the engine it takes: the API key's id it came with, or {@link #ANONYMOUS}. */
    public String tenant() {
        return tenant;
    }

    public Sequence(String id, long[] prompt, int maxTokens, Decoding decoding, SequenceOutputs outputs) {
        this(id, ANONYMOUS, prompt, maxTokens, decoding, outputs);
    }

    /** @param tenant the API key's id the request came with ({@link #ANONYMOUS} without one): whose share it takes */
    public Sequence(String id, String tenant, long[] prompt, int maxTokens, Decoding decoding, SequenceOutputs outputs) {
        this.tenant = tenant == null ? ANONYMOUS : tenant;
        if (prompt.length < 1 || maxTokens < 1) {
            throw new IllegalArgumentException("a sequence needs a prompt and at least one token to generate");
        }
        this.id = id;
        this.prompt = prompt;
        this.maxTokens = maxTokens;
        this.decoding = decoding;
        this.outputs = outputs;
        this.stageId = id;
        this.history = prompt.length;
        this.transcript = new Transcript(prompt);
    }

    /** What its steps computed, and the hash chain of its tokens (docs/verified-execution.md). */
    public Transcript transcript() {
        return transcript;
    }

    /**
     * Asks every stage for per-layer snapshot hashes of each of its steps (an admin's debugging request,
     * docs/verified-execution.md): they go into its transcript. Before it is queued.
     */
    public void askLayerHashes() {
        layerHashes = true;
    }

    /** Whether its steps ask the stages for per-layer snapshot hashes. */
    public boolean layerHashes() {
        return layerHashes;
    }

    /**
     * Feeds its prompt only once {@code leader}'s (the same tokens, submitted with it) is in the stages' caches: the
     * prompt's full blocks are then found in the stages' prefix caches, not computed again (docs/prefix-caching.md).
     */
    void followPromptOf(Sequence leader) {
        if (!java.util.Arrays.equals(prompt, leader.prompt)) {
            throw new IllegalArgumentException("a prompt leader has the same prompt");
        }
        promptLeader = leader;
    }

    /** The sequence whose prompt this one's waits for, or null. */
    Sequence promptLeader() {
        return promptLeader;
    }

    /** Whether its own prompt is sent and answered on its first attempt (its blocks are in the stages' caches). */
    boolean promptCached() {
        return attempt == 0 && computed >= prompt.length;
    }

    /** Whether its prompt is in the stages' caches or never will be on its first attempt (it was paused). */
    boolean promptSettled() {
        return promptCached() || attempt > 0 || pause != null;
    }

    /** Whether it has fed nothing yet on its first attempt. */
    boolean unstarted() {
        return attempt == 0 && sent == 0;
    }

    /** The task id. */
    public String id() {
        return id;
    }

    public int promptLength() {
        return prompt.length;
    }

    /** The prompt's tokens (a copy): what a router matches against the prefixes cached on each pipeline. */
    public long[] prompt() {
        return prompt.clone();
    }

    /**
     * For a greedy sequence, how many of the most likely tokens each step reports (its logprobs): the last stage then
     * sends a summary of the logits row instead of the row; -1 for a sampled one, which needs the row.
     */
    public int greedyAlternatives() {
        var params = decoding().sampler().params();
        return params.isGreedy() && decoding.constraint() == null ? params.logprobs() : -1; // a mask needs the row
    }

    public Decoding decoding() {
        return decoding;
    }

    public SequenceOutputs outputs() {
        return outputs;
    }

    /** The tokens chosen so far (read on the engine's thread, or once it ended). */
    public List<Long> generated() {
        return List.copyOf(generated);
    }

    /** Generated token {@code index}. */
    public long tokenId(int index) {
        return generated.get(index);
    }

    public int generatedCount() {
        return generated.size();
    }

    /** The text a token adds to the generation's, as the output processor follows it. */
    @FunctionalInterface
    public interface Text {

        /** Adds the token's text ({@code last}: no token follows it); answers whether a stop string ended the text. */
        boolean add(boolean last);
    }

    /**
     * Adds a chosen token (or, before it runs, one its task's record holds) and its {@code text}; answers why the
     * generation ends with it: "stop" for an end-of-sequence token, a stop string or a constrained value complete,
     * "length" at max_tokens, null while it goes on.
     */
    public String append(long tokenId, Text text) {
        generated.add(tokenId);
        TokenConstraint constraint = decoding.constraint();
        if (constraint != null) {
            constraint.accept(tokenId);
        }
        boolean eos = !decoding.ignoreEos() && decoding.model().endsSequence(tokenId)
                || constraint != null && constraint.finished();
        boolean last = eos || generated.size() == maxTokens;
        boolean stopString = text.add(last);
        return eos || stopString ? "stop" : last ? "length" : null;
    }

    /** The id its KV caches have on the stages in its current attempt. */
    public String stageId() {
        return stageId;
    }

    /** New caches for a task taken over: a new id, unlike any this or another replica used for the task. */
    void newStageId() {
        byte[] suffix = new byte[6];
        ThreadLocalRandom.current().nextBytes(suffix);
        stageId = id + "~" + HexFormat.of().formatHex(suffix);
    }

    /** The tokens fed from known ones: the prompt, then those generated. */
    int historyLength() {
        return prompt.length + generated.size();
    }

    /**
     * The tokens a step of {@code n} new positions from {@code position} feeds: its history's (the prompt, then the
     * generated tokens; a decode feeds the last one chosen).
     */
    void appendInput(long[] into, int at, int position, int n) {
        for (int i = 0; i < n; i++) {
            int p = position + i;
            into[at + i] = p < prompt.length ? prompt[p] : generated.get(p - prompt.length);
        }
    }

    /** Positions the sequence may reach: what every stage reserves KV cache for from its first chunk. */
    public int reservePositions() {
        return prompt.length + maxTokens;
    }

    /** Positions in the stages' KV caches (of the current attempt). */
    public int computed() {
        return computed;
    }

    /** 0 until a pause; each resume starts a new attempt (steps of an earlier one are ignored when they come back). */
    public int attempt() {
        return attempt;
    }

    /** Whether known tokens are still to be sent (the prompt, or the history being replayed). */
    public boolean prefilling() {
        return sent < history;
    }

    /** Whether it is replaying its history after a resume. */
    public boolean replaying() {
        return attempt > 0 && computed < history;
    }

    public boolean inFlight() {
        return stepsInFlight > 0;
    }

    /** Whether it is paused and not scheduled: it waits for the pipeline to serve again. */
    public boolean paused() {
        return pause != null && !pause.replaying();
    }

    /** Whether it waits to generate again: paused, or replaying its history since (or taken over, not caught up). */
    public boolean stalled() {
        return pause != null;
    }

    Pause pause() {
        return pause;
    }

    /** Whether another step may carry it now: none does, or it replays known tokens behind the ones in flight. */
    boolean canStep() {
        return !paused() && (stepsInFlight == 0 || (attempt > 0 && sent < history));
    }

    /**
     * The tokens its next step feeds: the prompt up to the next chunk boundary, or one token (a generated one being
     * replayed, or a decode).
     */
    int nextChunk(int chunkTokens) {
        return nextChunk(chunkTokens, 0);
    }

    /**
     * The tokens its next step feeds when its prompt's first {@code cachedTokens} (whole blocks) are in every stage's
     * prefix cache: from a block boundary, the cached blocks ahead (at most {@link #MAX_HIT_CHUNKS} chunks' worth) and
     * the rest up to the chunk boundary after them, in one step; otherwise as {@link #nextChunk(int)}.
     */
    int nextChunk(int chunkTokens, int cachedTokens) {
        if (sent >= prompt.length) {
            return 1;
        }
        int boundary = (hitReach(chunkTokens, cachedTokens) / chunkTokens + 1) * chunkTokens;
        return Math.min(prompt.length, boundary) - sent;
    }

    /**
     * Of a step of {@code n} tokens from its next position, those the stages restore from their prefix caches rather
     * than compute, when its prompt's first {@code cachedTokens} are cached: the whole cached blocks the step starts
     * with (at a block boundary), leaving its last token computed, as a stage's lookup does.
     */
    int restoredBy(int n, int chunkTokens, int cachedTokens) {
        int reach = hitReach(chunkTokens, cachedTokens);
        int lastBlock = (n - 1) / CachedPrefixes.BLOCK_TOKENS * CachedPrefixes.BLOCK_TOKENS;
        return Math.min(reach - sent, lastBlock);
    }

    /**
     * Where the cached blocks its next step restores end: {@code sent} when none (not on a block boundary, not in the
     * prompt, or nothing cached ahead), at most {@link #MAX_HIT_CHUNKS} - 1 chunks ahead (a stage that evicted them
     * meanwhile computes them all in that step).
     */
    private int hitReach(int chunkTokens, int cachedTokens) {
        int b = CachedPrefixes.BLOCK_TOKENS;
        int cached = Math.min(cachedTokens, (prompt.length - 1) / b * b);
        if (sent % b != 0 || cached <= sent) {
            return sent;
        }
        int reach = Math.min(cached, sent + (MAX_HIT_CHUNKS - 1) * chunkTokens);
        return Math.max(sent, reach / b * b);
    }

    /** The prompt's tokens, not copied: for the scheduler's look-up of its cached blocks. */
    long[] promptTokens() {
        return prompt;
    }

    /** The position its next step starts at. */
    int nextPosition() {
        return sent;
    }

    /** Whether a step of {@code n} tokens from the next position ends the known tokens, so its logits give a token. */
    boolean samplesAfter(int n) {
        return sent + n >= history;
    }

    void startStep(int tokens) {
        stepsInFlight++;
        sent += tokens;
    }

    /** A step of attempt {@code stepAttempt} carrying {@code tokens} of it came back (0: it failed, nothing was cached). */
    void finishStep(int stepAttempt, int tokens) {
        if (stepAttempt != attempt) {
            return; // a step of an attempt given up: its caches are gone with it
        }
        stepsInFlight--;
        computed += tokens;
        if (tokens == 0 && stepsInFlight == 0) {
            sent = computed; // nothing more of it is on its way: the next step goes again from here
        }
    }

    /**
     * Stops scheduling it; the first pause since it last generated keeps its time and cause (the recovery timeout
     * counts from it); answers whether this is that first pause.
     */
    boolean pause(long nowNanos, RuntimeException cause) {
        boolean first = pause == null;
        pause = first ? new Pause(nowNanos, cause, false) : new Pause(pause.sinceNanos(), pause.cause(), false);
        return first;
    }

    /**
     * Starts a new attempt that feeds its whole history again (the prompt and the tokens generated so far), from
     * position 0; it counts as paused until it generates.
     */
    void replay() {
        attempt++;
        history = historyLength();
        computed = 0;
        sent = 0;
        stepsInFlight = 0;
        pause = new Pause(pause.sinceNanos(), pause.cause(), true);
    }

    /** A task taken over from another replica (or from a client gone) starts here by replaying its history. */
    void takenOver(long nowNanos) {
        pause = new Pause(nowNanos, null, true);
        replay();
    }

    /** It chose a token again after a pause: answers whether it was paused. */
    boolean generatesAgain() {
        boolean was = pause != null;
        pause = null;
        return was;
    }

    String cancelled() {
        return cancelled;
    }

    String detached() {
        return detached;
    }

    String movedTo() {
        return movedTo;
    }

    void cancel(String reason) {
        if (cancelled == null) {
            cancelled = reason;
        }
    }

    void detach(String reason) {
        if (detached == null) {
            detached = reason;
        }
    }

    /** A client came back for it: it stays. */
    void reattach() {
        detached = null;
    }

    void moveTo(String replica) {
        if (movedTo == null) {
            movedTo = replica;
        }
    }

    /** Whether it is to leave or end at its next step. */
    boolean leaving() {
        return cancelled != null || detached != null || movedTo != null;
    }
}
