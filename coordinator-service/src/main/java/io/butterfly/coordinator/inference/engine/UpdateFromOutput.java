package io.butterfly.coordinator.inference.engine;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.sampling.GreedyChoice;
import io.butterfly.coordinator.inference.sampling.TokenChoice;
import java.time.Duration;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What comes of each step for its sequences, decided on the engine's thread (vLLM's {@code update_from_output}): a
 * returned micro-batch gives each sequence due a token its token, sampled, and the sequence continues, or finishes
 * (an end-of-sequence token, a stop string, max_tokens); a failed one pauses its sequences when a new plan or a retry
 * may mend it and ends them otherwise; and between steps, sequences whose client went away end or leave, and those
 * paused past the recovery timeout fail. Each decision is told to the sequence's {@link SequenceOutputs}; the stage
 * ids of the sequences that ended are collected for the caller to free on the stages.
 */
final class UpdateFromOutput {

    private static final Logger log = LoggerFactory.getLogger(UpdateFromOutput.class);
    /** Failures a new plan, a reload or a retry can mend: anything else fails the request at once. */
    private static final Set<ErrorKind> RESUMABLE = EnumSet.of(ErrorKind.UNAVAILABLE, ErrorKind.ABORTED,
            ErrorKind.DEADLINE_EXCEEDED, ErrorKind.FAILED_PRECONDITION, ErrorKind.UNKNOWN);

    private final Scheduler scheduler;
    private final ServingMetrics metrics;
    private final long recoveryTimeoutNanos;

    UpdateFromOutput(Scheduler scheduler, ServingMetrics metrics, Duration recoveryTimeout) {
        this.scheduler = scheduler;
        this.metrics = metrics;
        this.recoveryTimeoutNanos = recoveryTimeout.toNanos();
    }

    static boolean resumable(RuntimeException cause) {
        return cause instanceof ButterflyException b && RESUMABLE.contains(b.kind());
    }

    /** Whether the chunk's sequence still runs here (it did not end, or leave, meanwhile). */
    private boolean here(Chunk c) {
        return scheduler.get(c.sequence().id()) == c.sequence();
    }

    /** A micro-batch came back with the last stage's logits, {@code pipelineNanos} after it was sent. */
    void stepped(MicroBatch batch, StepResult result, long pipelineNanos, List<String> ended) {
        long inStages = 0;
        for (StepResult.StageTiming t : result.timings()) {
            inStages += t.wallNanos();
            metrics.stageStep(t.nodeId(), t.computeNanos() / 1e9, t.wallNanos() / 1e9);
        }
        long transport = Math.max(0, pipelineNanos - inStages);
        metrics.transport(transport / 1e9, result.timings().size() + 1);
        scheduler.stepped(batch);
        Rows rows = new Rows(batch.chunks(), result);
        List<Chunk> chunks = batch.chunks();
        for (int i = 0; i < chunks.size(); i++) {
            Chunk c = chunks.get(i);
            Rows.Row row = null;
            RuntimeException malformed = null;
            try {
                row = rows.next(c, i);
            } catch (RuntimeException e) {
                malformed = e; // told to the chunk's sequence below, if it is still here
            }
            Sequence s = c.sequence();
            if (!here(c)) {
                continue; // ended meanwhile
            }
            s.outputs().stepEnded(batch.id());
            if (c.attempt() != s.attempt() || s.paused()) {
                continue; // a step of an attempt given up
            }
            s.outputs().stepTimed(result.timings(), pipelineNanos, transport);
            Transcript.Step recorded = transcribed(batch.id(), c, i, result.hashes());
            s.transcript().stepped(recorded);
            if (s.cancelled() != null) {
                end(s, null, cancelledError(s), ended);
                continue;
            }
            if (malformed != null) {
                end(s, null, malformed, ended);
                continue;
            }
            if (row == null) {
                continue;
            }
            try {
                List<Transcript.StageOutput> stages = recorded.stages();
                long logitsHash = stages.isEmpty() ? 0 : stages.get(stages.size() - 1).outputHash();
                String finish = sample(s, row, c.position() + c.numTokens(), logitsHash);
                if (finish != null) {
                    end(s, finish, null, ended);
                }
            } catch (RuntimeException e) {
                end(s, null, e, ended);
            }
        }
    }

    /** The transcript's entry of chunk {@code index}: its token ids' hash and what each stage computed of it. */
    private static Transcript.Step transcribed(long batch, Chunk c, int index, List<StepResult.StageHashes> hashes) {
        long[] ids = new long[c.numTokens()];
        c.sequence().appendInput(ids, 0, c.position(), c.numTokens());
        List<Transcript.StageOutput> stages = new java.util.ArrayList<>(hashes.size());
        for (StepResult.StageHashes h : hashes) {
            long out = index < h.outputHashes().length ? h.outputHashes()[index] : 0;
            List<Transcript.LayerOutput> layers = c.sequence().layerHashes() ? h.layers().stream()
                    .filter(l -> index < l.outputHashes().length)
                    .map(l -> new Transcript.LayerOutput(l.layer(), l.outputHashes()[index])).toList() : List.of();
            stages.add(new Transcript.StageOutput(h.nodeId(), h.contract(), out, layers));
        }
        return new Transcript.Step(batch, c.position(), c.numTokens(),
                io.butterfly.common.hash.Xxh64.ofLongs(ids, 0, ids.length), stages);
    }

    /**
     * Which part of the last stage's answer is each chunk's: nothing for a chunk that does not sample; for one that
     * does, its greedy summary (a greedy sequence's, when the stage sent summaries) or its logits row, each kind in
     * batch order. A worker that predates skip_logits returns a row for every chunk. Malformed answers are the last
     * stage's failure, told to the chunk that reads them.
     */
    private static final class Rows {
        /** A chunk's share: its whole row ({@code logits} from {@code at}, {@code vocab} long) or its summary. */
        record Row(float[] logits, int at, int vocab, GreedyChoice greedy) {
        }

        private final StepResult result;
        private final List<Chunk> chunks;
        private final boolean summaries;
        private final int greedyChunks;
        private float[] logits;
        private int vocab;
        private int row = -1;
        private int summary = -1;

        Rows(List<Chunk> chunks, StepResult result) {
            this.result = result;
            this.chunks = chunks;
            this.summaries = !result.greedy().isEmpty();
            this.greedyChunks = (int) chunks.stream().filter(c -> c.samples() && c.sequence().greedyAlternatives() >= 0).count();
        }

        Row next(Chunk c, int index) {
            if (!c.samples()) {
                return null;
            }
            if (summaries && c.sequence().greedyAlternatives() >= 0) {
                summary++;
                if (result.greedy().size() != greedyChunks) {
                    throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL, "last stage returned "
                            + result.greedy().size() + " greedy summaries for " + greedyChunks + " greedy sequence(s)");
                }
                return new Row(null, 0, 0, result.greedy().get(summary));
            }
            row++;
            if (logits == null) {
                int sampling = (int) chunks.stream().filter(Chunk::samples).count() - (summaries ? greedyChunks : 0);
                logits = logits(result, sampling, chunks.size());
                vocab = (int) (long) result.logitsShape().get(1);
            }
            // A worker from before skip_logits (a rolling upgrade) returns a row for every chunk.
            int at = !summaries && logits.length / vocab == chunks.size() ? index : row;
            return new Row(logits, at * vocab, vocab, null);
        }
    }

    /** The logits rows: one per sampling chunk, or (from a worker that predates skip_logits) one per chunk. */
    private static float[] logits(StepResult result, int sampling, int chunks) {
        float[] logits = result.logits();
        List<Long> shape = result.logitsShape();
        if (shape.size() != 2 || shape.get(1) < 1 || (shape.get(0) != sampling && shape.get(0) != chunks)
                || logits.length != shape.get(0) * shape.get(1)) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL, "last stage returned logits of"
                    + " shape " + shape + " for " + sampling + " sampling sequence(s) of " + chunks);
        }
        return logits;
    }

    /**
     * Chooses the sequence's next token from its row or its greedy summary, and adds it to the transcript's chain
     * ({@code end}: the positions the row is conditioned on, {@code logitsHash}: the last stage's hash of it); returns
     * its finish reason once it ends.
     */
    private String sample(Sequence s, Rows.Row row, int end, long logitsHash) {
        Sequence.Decoding d = s.decoding();
        int vocab = d.model().vocabSize();
        long t0 = System.nanoTime();
        int step = s.generatedCount();
        TokenChoice choice;
        if (row.greedy() != null) {
            GreedyChoice g = row.greedy();
            if (g.token() < 0 || g.token() >= vocab || Double.isNaN(g.logZ()) || Arrays.stream(g.topIds()).anyMatch(id -> id < 0 || id >= vocab)) {
                throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL,
                        "last stage returned a greedy choice outside the vocabulary of " + vocab + ": " + g);
            }
            choice = d.sampler().choose(g);
        } else {
            if (row.vocab() != vocab) {
                throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL,
                        "last stage returned logits of " + row.vocab() + " tokens, the vocabulary has " + vocab);
            }
            float[] logits = Arrays.copyOfRange(row.logits(), row.at(), row.at() + vocab);
            if (d.constraint() != null) {
                d.constraint().mask(logits); // before the seeded draw: the same tokens so far, the same mask
            }
            try {
                choice = d.sampler().choose(logits, step);
            } catch (IllegalArgumentException e) { // NaN, +infinity, all -infinity: the last stage's failure (502)
                throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL,
                        "last stage returned logits that cannot be sampled at step " + step + ": " + e.getMessage());
            }
        }
        long samplingNanos = System.nanoTime() - t0;
        s.transcript().sampled(end, logitsHash, choice.tokenId());
        if (s.generatesAgain()) {
            log.info("task {} generates again at token {}", s.id(), step);
            s.outputs().resumed();
        }
        return s.append(choice.tokenId(), last -> s.outputs().token(step, choice, last, samplingNanos));
    }

    /**
     * A micro-batch failed: its sequences pause when a new plan or a retry may mend it, and fail otherwise. Answers
     * whether any sequence is paused now.
     */
    boolean stepFailed(MicroBatch batch, Throwable failure, List<String> ended) {
        scheduler.stepFailed(batch);
        RuntimeException cause = asRuntime(failure);
        boolean resumable = resumable(cause);
        for (Chunk c : batch.chunks()) {
            Sequence s = c.sequence();
            if (!here(c)) {
                continue; // ended meanwhile
            }
            s.outputs().stepFailed(batch.id(), cause);
            if (c.attempt() != s.attempt() || s.paused()) {
                continue; // a step of an attempt given up, or paused by an earlier step of its replay
            }
            // A replay refused memory waits: a stage may not have freed the caches of its earlier attempt yet.
            boolean pauses = resumable || c.attempt() > 0 && cause instanceof ButterflyException b
                    && b.kind() == ErrorKind.RESOURCE_EXHAUSTED;
            if (pauses && s.cancelled() == null) {
                pause(s, cause);
            } else {
                end(s, null, cause, ended);
            }
        }
        return scheduler.paused() > 0;
    }

    private void pause(Sequence s, RuntimeException cause) {
        if (scheduler.pause(s, System.nanoTime(), cause)) {
            log.info("task {} paused after {} tokens: {}", s.id(), s.generatedCount(), cause.getMessage());
            s.outputs().paused(cause);
        }
    }

    /** Fails the sequences that have waited to generate again for longer than the recovery timeout. */
    void giveUpStalled(List<String> ended) {
        long now = System.nanoTime();
        for (Sequence s : scheduler.sequences()) {
            if (s.stalled() && now - s.pause().sinceNanos() >= recoveryTimeoutNanos) {
                RuntimeException cause = s.pause().cause() != null ? s.pause().cause()
                        : new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE, "no stage answered");
                ErrorCode code = cause instanceof ButterflyException b ? b.code() : ErrorCode.INTERNAL_ERROR;
                ErrorKind kind = cause instanceof ButterflyException b ? b.kind() : ErrorKind.UNAVAILABLE;
                end(s, null, new ButterflyException(code, kind, "the generation could not resume within "
                        + Duration.ofNanos(recoveryTimeoutNanos) + " (butterfly.coordinator.engine.recovery-timeout)"
                        + " after " + s.generatedCount() + " tokens: " + cause.getMessage(), Map.of(), cause), ended);
            }
        }
    }

    /** When the next stalled sequence's recovery timeout passes (System.nanoTime); Long.MAX_VALUE: none stalls. */
    long nextGiveUpNanos() {
        long next = Long.MAX_VALUE;
        for (Sequence s : scheduler.sequences()) {
            if (s.stalled()) {
                next = Math.min(next, s.pause().sinceNanos() + recoveryTimeoutNanos);
            }
        }
        return next;
    }

    /**
     * Ends the sequences whose clients went away, leaves those whose client detached or whose task moved to another
     * replica; unless a micro-batch carries them (they go when it returns).
     */
    void leaveWhenDue(List<String> ended) {
        for (Sequence s : scheduler.sequences()) {
            if (s.inFlight() || !s.leaving()) {
                continue;
            }
            if (s.cancelled() != null) {
                end(s, null, cancelledError(s), ended);
            } else {
                leave(s, ended);
            }
        }
    }

    /**
     * A sequence leaves without ending its task: its client detached (the task stays recorded, paused, for a client
     * that comes back), or the task moved to another replica (which records it from now on).
     */
    private void leave(Sequence s, List<String> ids) {
        scheduler.remove(s);
        ids.add(s.stageId());
        String why;
        if (s.movedTo() != null) {
            why = "the generation moved to coordinator " + s.movedTo() + ", where its client resumed it";
            s.outputs().left(goesOnElsewhere(ErrorKind.ABORTED, why), null);
        } else {
            why = s.detached();
            s.outputs().left(goesOnElsewhere(ErrorKind.UNAVAILABLE, why
                    + ": the rest of the generation is kept for a client that comes back (Last-Event-ID)"), why);
        }
        log.info("task {} left this replica after {} tokens: {}", s.id(), s.generatedCount(), why);
    }

    private static RuntimeException cancelledError(Sequence s) {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.CANCELLED, s.cancelled());
    }

    /** Ends a sequence: finished ({@code finish}) or failed ({@code failure}); its stage id joins {@code ended}. */
    private void end(Sequence s, String finish, RuntimeException failure, List<String> ended) {
        if (scheduler.get(s.id()) != s) {
            return;
        }
        scheduler.remove(s);
        ended.add(s.stageId());
        if (finish != null) {
            s.outputs().finished(finish);
        } else {
            s.outputs().failed(failure);
        }
    }

    /** Fails every sequence (the engine broke). */
    void failAll(RuntimeException why, List<String> ended) {
        for (Sequence s : scheduler.sequences()) {
            end(s, null, why, ended);
        }
    }

    /**
     * Every sequence leaves, recorded paused with its tokens so far (another replica resumes it for a client that
     * comes back with {@code Last-Event-ID} or its {@code Idempotency-Key}), its answer here failing with "resume at
     * another replica".
     */
    void leaveAll(List<String> left) {
        for (Sequence s : scheduler.sequences()) {
            scheduler.remove(s);
            left.add(s.stageId());
            s.outputs().left(goesOnElsewhere(ErrorKind.UNAVAILABLE,
                    "the coordinator is shutting down: resume at another replica (Last-Event-ID, Idempotency-Key)"),
                    "its coordinator stopped");
        }
    }

    private static RuntimeException asRuntime(Throwable t) {
        Throwable cause = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
        return cause instanceof RuntimeException r ? r
                : new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.INTERNAL, "internal error: " + cause);
    }

    /**
     * Why a generation's answer ends here though the generation does not: a client resumes it at any replica
     * ({@link EngineCore#RESUMABLE_CONTEXT} tells it so).
     */
    private static ButterflyException goesOnElsewhere(ErrorKind kind, String why) {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, kind, why,
                Map.of(EngineCore.RESUMABLE_CONTEXT, "true"), null);
    }
}
