package io.butterfly.coordinator.jobs;

import io.butterfly.coordinator.cluster.JobRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.inference.NotServingException;
import io.butterfly.coordinator.inference.engine.QueueFullException;
import io.butterfly.coordinator.jobs.wire.JobsMessage;
import io.butterfly.coordinator.jobs.wire.WireError;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * What the coordinator answers each JOBS message with (docs/jobs.md), whatever carries it: a JOB_REQUEST with its
 * batch, a RESULT with its acknowledgement, anything else with an ERROR. A request names its job by the job's seed
 * (unique among jobs, {@code JobDefined}); the answer depends on (seed, step, position) only, so any replica answers it
 * with the same bytes at any time. Never fails: every refusal is an ERROR message.
 */
public final class JobsProtocol {

    private final ControlLog control;
    private final JobBatches batches;
    private final ResultStore results;

    public JobsProtocol(ControlLog control, JobBatches batches, ResultStore results) {
        this.control = control;
        this.batches = batches;
        this.results = results;
    }

    public CompletableFuture<JobsMessage> answer(JobsMessage message) {
        try {
            if (message instanceof JobsMessage.JobRequest r) {
                return batch(r);
            } else if (message instanceof JobsMessage.Result r) {
                return CompletableFuture.completedFuture(result(r));
            }
            return done(error(WireError.UNEXPECTED_OPCODE, message.opcode() + " is the coordinator's to send"));
        } catch (RuntimeException e) {
            return done(refusal(e));
        }
    }

    private CompletableFuture<JobsMessage> batch(JobsMessage.JobRequest r) {
        Optional<JobRecord> job = job(r.seed());
        if (job.isEmpty()) {
            return done(unknownJob(r.seed()));
        }
        if (Long.compareUnsigned(r.position(), job.get().samples()) >= 0) {
            return done(outOfRange(job.get(), r.position()));
        }
        return batches.generate(job.get(), r.step(), r.position())
                .<JobsMessage>thenApply(data -> new JobsMessage.JobResponse(r.seed(), r.step(), r.position(), data))
                .exceptionally(JobsProtocol::refusal);
    }

    private JobsMessage result(JobsMessage.Result r) {
        Optional<JobRecord> job = job(r.seed());
        if (job.isEmpty()) {
            return unknownJob(r.seed());
        }
        if (Long.compareUnsigned(r.position(), job.get().samples()) >= 0) {
            return outOfRange(job.get(), r.position());
        }
        ResultStore.Outcome outcome = results.offer(job.get().id(), r.step(), r.position(), r.data());
        if (outcome == ResultStore.Outcome.FULL) {
            return error(WireError.RESULTS_FULL, "this coordinator keeps no more results"
                    + " (butterfly.coordinator.jobs.max-result-bytes): fetch them and retry");
        }
        return new JobsMessage.ResultAck(r.seed(), r.step(), r.position(), outcome == ResultStore.Outcome.STORED);
    }

    private Optional<JobRecord> job(long seed) {
        return control.state().jobs().values().stream().filter(j -> j.seed() == seed).findFirst();
    }

    private static JobsMessage unknownJob(long seed) {
        return error(WireError.UNKNOWN_JOB, "no job has seed " + Long.toUnsignedString(seed));
    }

    private static JobsMessage outOfRange(JobRecord job, long position) {
        return error(WireError.POSITION_OUT_OF_RANGE, "position " + Long.toUnsignedString(position) + " is past job "
                + job.id() + "'s " + job.samples() + " samples");
    }

    /** A failure as the ERROR it is: a refusal to retry later (UNAVAILABLE), or a generation that failed. */
    static JobsMessage refusal(Throwable failure) {
        Throwable t = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        boolean retry = t instanceof NotServingException || t instanceof QueueFullException
                || t instanceof JobBatches.DatasetUnavailableException
                || t instanceof ControlLogUnavailableException;
        return error(retry ? WireError.UNAVAILABLE : WireError.GENERATION_FAILED, String.valueOf(t.getMessage()));
    }

    private static JobsMessage error(WireError code, String message) {
        return new JobsMessage.ErrorFrame(code.code(), message);
    }

    private static CompletableFuture<JobsMessage> done(JobsMessage m) {
        return CompletableFuture.completedFuture(m);
    }
}
