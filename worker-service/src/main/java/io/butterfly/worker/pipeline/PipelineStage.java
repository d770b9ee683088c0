package io.butterfly.worker.pipeline;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.verify.PrecisionContract;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.engine.CacheBudgetExceededException;
import io.butterfly.worker.engine.ExpertGroupUnavailableException;
import io.butterfly.worker.engine.EngineThread;
import io.butterfly.worker.engine.PartitionExecutor;
import io.butterfly.worker.engine.PartitionSpec;
import io.butterfly.worker.engine.SequenceChunk;
import io.butterfly.worker.engine.SequenceConflictException;
import io.butterfly.worker.engine.StageInput;
import io.butterfly.worker.engine.StageResult;
import io.butterfly.worker.partition.PartitionManager;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This worker's place in the pipeline: checks a step's input, runs the local layers, and hands the
 * activations on to the next stage; the last stage sends the logits straight to the waiting coordinator.
 */
public class PipelineStage {

    private static final Logger log = LoggerFactory.getLogger(PipelineStage.class);

    private final PartitionManager partitions;
    private final Downstream nextStages;
    private final Outcomes outcomes;
    private final StepTracing tracing;
    private final String nodeId;
    private final PrecisionContract contract;
    private final OutputCorruption corruption;
    private final EngineThread engineThread;
    private volatile long stepsExecuted;
    private volatile long computeNanosTotal;
    private volatile long hashNanosTotal;

    /**
     * @param contract   what this stage computes under: it refuses hidden states computed under another
     * @param corruption   fault injection ({@link OutputCorruption#NONE} but in tests and demonstrations)
     * @param engineThread this worker's engine thread, the one its partitions compute on: steps are queued there
     */
    public PipelineStage(PartitionManager partitions, Downstream nextStages, Outcomes outcomes, StepTracing tracing,
                         String nodeId, PrecisionContract contract, OutputCorruption corruption,
                         EngineThread engineThread) {
        this.partitions = partitions;
        this.nextStages = nextStages;
        this.outcomes = outcomes;
        this.tracing = tracing;
        this.nodeId = nodeId;
        this.contract = contract;
        this.corruption = corruption;
        this.engineThread = java.util.Objects.requireNonNull(engineThread, "engineThread");
    }

    /**
     * Queues a step that arrived on a Steps stream for the engine thread, behind the steps that came before it, and
     * returns at once: the step is checked, computed and handed on there ({@link #accept}), so between the transport
     * thread that read it and the one that writes its result no other thread wakes up (two wake-ups less a stage and
     * a token than computing it on a gRPC executor thread that waits for the engine).
     */
    public void enqueue(Step step) {
        engineThread.execute(() -> accept(step));
    }

    /**
     * Runs one step that arrived on a Steps stream and hands it on: to the next stage, or (last stage) its
     * logits to the coordinator in {@code reply_to}. A step that fails here is reported there too, with the
     * error code and status this stage would have answered a call with; it never breaks the stream.
     */
    public void accept(Step step) {
        long entry = System.nanoTime();
        StepTracing.Spans spans = StepTracing.Spans.NONE;
        try {
            spans = tracing.started(step, nodeId);
            run(step, entry);
            spans.end(null);
        } catch (RuntimeException | OutOfMemoryError e) { // reported, never thrown into the shared stream
            ButterflyException failure = classify(e);
            if (failure.code() == ErrorCode.INTERNAL_ERROR) {
                log.error("step {} of task {} failed", step.step(), step.taskId(), e);
            }
            spans.end(failure);
            report(step, StepOutcome.failed(step, new StepOutcome.Failure(nodeId, failure), new StageClock(nodeId, entry, 0)));
        }
    }

    /** The code and status this stage would answer a call with. */
    static ButterflyException classify(Throwable e) {
        if (e instanceof SequenceConflictException conflict) {
            return new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION, conflict.getMessage());
        }
        if (e instanceof ExpertGroupUnavailableException group) {
            return new ButterflyException(ErrorCode.NO_PEERS_AVAILABLE, ErrorKind.UNAVAILABLE, group.getMessage());
        }
        if (e instanceof io.butterfly.worker.engine.HeadShardUnavailableException shard) {
            return new ButterflyException(ErrorCode.NO_PEERS_AVAILABLE, ErrorKind.UNAVAILABLE, shard.getMessage());
        }
        if (e instanceof CacheBudgetExceededException full) {
            return new ButterflyException(ErrorCode.INSUFFICIENT_MEMORY,
                    full.neverFits() ? ErrorKind.OUT_OF_RANGE : ErrorKind.RESOURCE_EXHAUSTED, full.getMessage());
        }
        return ButterflyException.of(e);
    }

    private void run(Step step, long entry) {
        if (step.replyTo() == null) {
            throw new IllegalArgumentException("reply_to must name the coordinator waiting for the step");
        }
        step.replyTo().requireValid("reply_to");
        List<Endpoint> downstream = step.downstream();
        for (int i = 0; i < downstream.size(); i++) {
            downstream.get(i).requireValid("downstream[" + i + "]");
        }
        // The partition runs steps of the epochs from stepsFromEpoch to its epoch (docs/scale-out.md). The epoch
        // is read before the executor and the first epoch after it: both only grow, and a load sets the first
        // epoch to its own before it replaces the executor, so a step inside both bounds found the executor that
        // held the stage across them (a hold-on keeps it), not one an assignment replaced between the reads.
        long epoch = partitions.status().epoch();
        PartitionExecutor executor = partitions.executor();
        String refused = refusal(step.epoch(), partitions.stepsFromEpoch(), epoch);
        if (refused != null) {
            throw new ButterflyException(ErrorCode.STALE_TERM, ErrorKind.ABORTED, refused);
        }
        PartitionSpec spec = executor.spec();
        // Routing is checked before the step runs: a refused step must not have advanced the KV cache.
        if (spec.hasHead() && !downstream.isEmpty()) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION,
                    "this worker holds the LM head (last stage) but the step names " + downstream.size() + " more stage(s)");
        }
        if (!spec.hasHead() && downstream.isEmpty()) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION,
                    "layers [" + spec.layerStart() + ", " + spec.layerEnd() + ") are not the last stage but the step names no next stage");
        }
        List<SequenceChunk> batch = batch(step);
        int totalTokens = 0;
        for (SequenceChunk chunk : batch) {
            totalTokens += chunk.numTokens();
        }
        // The envelope before the input is decoded, the input's hashes before it is computed on: a refused step
        // must not have advanced the KV cache either.
        PhaseEnvelopes.checkContract(step, spec, contract, totalTokens);
        StageInput input = input(step.input(), spec, totalTokens);
        long h0 = System.nanoTime();
        PhaseEnvelopes.checkInputHashes(step, input, spec.config().hiddenSize());
        long hashNanos = System.nanoTime() - h0;
        LayerSnapshots snapshots = snapshots(step, executor, spec);

        long t0 = System.nanoTime();
        StageResult result = corruption.apply(executor.forward(batch, input, snapshots));
        long computeNanos = System.nanoTime() - t0;
        long h1 = System.nanoTime();
        StageHashes hashes = new StageHashes(nodeId, contract, PhaseEnvelopes.outputHashes(step, result),
                snapshots == null ? List.of() : snapshots.layers());
        hashNanos += System.nanoTime() - h1;
        StageClock clock = new StageClock(nodeId, entry, computeNanos);
        synchronized (this) { // steps of several streams run at once; the counters are metrics, not the engine's lock
            stepsExecuted++;
            computeNanosTotal += computeNanos;
            hashNanosTotal += hashNanos;
        }

        if (result.logits()) {
            report(step, StepOutcome.logits(step, result, clock, hashes));
            return;
        }
        nextStages.forward(step, result, clock, hashes);
    }

    /**
     * The probe of a step that shows its layers: one a sequence asked per-layer hashes for, or one fault injection
     * corrupts at a layer; null for the others. A stage that cannot show its layers (libtorch's) refuses a step asking
     * for their hashes before it computes.
     */
    private LayerSnapshots snapshots(Step step, PartitionExecutor executor, PartitionSpec spec) {
        boolean hashing = step.sequences().stream().anyMatch(Step.Slice::layerHashes);
        boolean corrupt = corruption.layer() >= 0 && corruption.layer() < spec.numLayers() && corruption.drawStep();
        if (!hashing && !corrupt) {
            return null;
        }
        if (!executor.layerProbes()) {
            throw new ButterflyException(ErrorCode.INSUFFICIENT_CAPABILITIES, ErrorKind.INVALID_ARGUMENT,
                    "per-layer snapshot hashes need a stage the native kernels compute; " + nodeId + " computes layers ["
                            + spec.layerStart() + ", " + spec.layerEnd() + ") with " + executor.projections()
                            + " in one call");
        }
        int[] tokens = step.sequences().stream().mapToInt(Step.Slice::numTokens).toArray();
        return new LayerSnapshots(spec.layerStart(), tokens, spec.config().hiddenSize(), hashing,
                corrupt ? corruption : null);
    }

    /** Why a step of {@code stepEpoch} may not run on a stage that runs steps of epochs {@code fromEpoch} to {@code epoch}; null if it may. */
    static String refusal(long stepEpoch, long fromEpoch, long epoch) {
        if (stepEpoch > epoch) {
            return "step carries epoch " + stepEpoch + " but this worker's partition is of epoch " + epoch;
        }
        if (stepEpoch < fromEpoch) {
            return "step carries epoch " + stepEpoch + " but this worker's partition runs steps of epochs " + fromEpoch
                    + " to " + epoch + " only (its pipeline changed since)";
        }
        return null;
    }

    private void report(Step step, StepOutcome outcome) {
        String unusable = step.replyTo() == null ? "it names no coordinator to reply to" : step.replyTo().problem("reply_to");
        if (unusable == null) {
            outcomes.send(step.replyTo(), outcome);
        } else {
            log.warn("outcome of step {} of task {} dropped: {}", step.step(), step.taskId(), unusable);
        }
    }

    /**
     * Frees the sequences here and asks the next stage to do the same (best effort). The next stage is asked
     * first and on its own: neither a partition that is not ready here nor a wait for the engine (behind long
     * prefills) nor the caller's deadline may keep the later stages from freeing theirs.
     */
    public void release(List<String> sequenceIds, List<Endpoint> downstream) {
        if (!downstream.isEmpty()) {
            Endpoint next = downstream.get(0).requireValid("downstream[0]");
            nextStages.release(next, sequenceIds, downstream.subList(1, downstream.size()));
        }
        PartitionExecutor executor;
        try {
            executor = partitions.executor();
        } catch (ButterflyException notReady) {
            return; // nothing is cached here
        }
        sequenceIds.forEach(executor::release);
    }

    private static List<SequenceChunk> batch(Step step) {
        if (step.sequences().isEmpty()) {
            throw new IllegalArgumentException("sequences must not be empty");
        }
        List<SequenceChunk> batch = new ArrayList<>(step.sequences().size());
        for (Step.Slice s : step.sequences()) {
            if (s.sequenceId().isBlank() || s.numTokens() <= 0 || s.position() < 0 || s.reservePositions() < 0) {
                throw new IllegalArgumentException("sequence '" + s.sequenceId()
                        + "' needs an id, num_tokens > 0, position >= 0 and reserve_positions >= 0");
            }
            batch.add(new SequenceChunk(s.sequenceId(), s.position(), s.numTokens(), s.reservePositions(),
                    s.skipLogits()));
        }
        return batch;
    }

    private static StageInput input(EncodedInput input, PartitionSpec spec, int totalTokens) {
        if (spec.hasEmbedding()) {
            long[] ids = input.tokenIds("input token ids");
            if (ids.length != totalTokens) {
                throw new IllegalArgumentException(ids.length + " token ids for " + totalTokens + " tokens in the batch");
            }
            int vocab = spec.config().vocabSize();
            for (long id : ids) {
                if (id < 0 || id >= vocab) {
                    throw new IllegalArgumentException("token id " + id + " is outside the vocabulary [0, " + vocab + ")");
                }
            }
            return new StageInput.Tokens(ids);
        }
        EncodedInput.Hidden hidden = input.hiddenStates("input hidden states");
        if (hidden.rows() != totalTokens || hidden.cols() != spec.config().hiddenSize()) {
            throw new IllegalArgumentException("hidden states of shape [" + hidden.rows() + ", " + hidden.cols()
                    + "] do not match [" + totalTokens + ", " + spec.config().hiddenSize() + "]");
        }
        return new StageInput.Hidden(hidden.littleEndianFloats());
    }

    public long stepsExecuted() {
        return stepsExecuted;
    }

    public long computeNanosTotal() {
        return computeNanosTotal;
    }

    /** Time spent hashing steps' inputs and outputs (docs/verified-execution.md: the envelope's cost). */
    public long hashNanosTotal() {
        return hashNanosTotal;
    }

    /** Outputs corrupted on purpose so far (fault injection; 0 unless it is enabled). */
    public long outputsCorrupted() {
        return corruption.corrupted();
    }
}
