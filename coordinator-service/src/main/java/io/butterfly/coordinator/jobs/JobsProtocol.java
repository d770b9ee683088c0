package io.butterfly.coordinator.jobs;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.JobLease;
import io.butterfly.coordinator.cluster.JobRecord;
import io.butterfly.coordinator.cluster.JobWork;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.inference.NotServingException;
import io.butterfly.coordinator.inference.engine.QueueFullException;
import io.butterfly.coordinator.jobs.wire.JobsMessage;
import io.butterfly.coordinator.jobs.wire.WireError;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * What the coordinator answers each JOBS message with (docs/jobs.md), whatever carries it: a JOB_REQUEST with its
 * batch, a RESULT with its acknowledgement, anything else with an ERROR. A request names its job by the job's seed
 * (unique among jobs, {@code JobDefined}). Both go through the replicated control log before they are answered: the
 * batch handed out is leased there ({@code JobBatchLeased}, so another replica takes its RESULT, and hands it to the
 * next request once the lease ends), and a RESULT is committed there once ({@code JobResultRecorded}), so a failover
 * loses no acknowledged result. A batch's bytes depend on (seed, step, position) only, so any replica answers it with
 * the same bytes at any time. Never fails: every refusal is an ERROR message.
 */
public final class JobsProtocol {

    private final ControlLog control;
    private final JobBatches batches;
    private final Executor commits;
    private final LongSupplier clock;
    private final long leaseMs;
    private final String replicaId;
    private final AtomicLong handouts = new AtomicLong();

    /**
     * @param commits  where the control-log commits run (they block; the caller's thread, an event loop, must not)
     * @param leaseMs  how long a client has to answer a batch (butterfly.coordinator.jobs.lease)
     */
    public JobsProtocol(ControlLog control, JobBatches batches, Executor commits, LongSupplier clock, long leaseMs,
                        String replicaId) {
        this.control = control;
        this.batches = batches;
        this.commits = commits;
        this.clock = clock;
        this.leaseMs = leaseMs;
        this.replicaId = replicaId;
    }

    /** The answer to {@code message} from {@code client} (a name for the connection, kept in the lease). */
    public CompletableFuture<JobsMessage> answer(JobsMessage message, String client) {
        try {
            if (message instanceof JobsMessage.JobRequest r) {
                return batch(r, client);
            } else if (message instanceof JobsMessage.Result r) {
                return result(r);
            }
            return done(error(WireError.UNEXPECTED_OPCODE, message.opcode() + " is the coordinator's to send"));
        } catch (RuntimeException e) {
            return done(refusal(e));
        }
    }

    private CompletableFuture<JobsMessage> batch(JobsMessage.JobRequest r, String client) {
        Optional<JobRecord> found = job(r.seed());
        if (found.isEmpty()) {
            return done(unknownJob(r.seed()));
        }
        JobRecord job = found.get();
        boolean any = r.position() == JobWork.ANY_POSITION;
        if (!any && Long.compareUnsigned(r.position(), job.samples()) >= 0) {
            return done(outOfRange(job, r.position()));
        }
        String holder = replicaId + "/" + client + "/" + handouts.incrementAndGet();
        return CompletableFuture.supplyAsync(() -> lease(job, r.step(), r.position(), holder), commits)
                .thenCompose(leased -> leased.error() != null ? done(leased.error())
                        : batches.generate(job, r.step(), leased.position()).<JobsMessage>thenApply(data ->
                                new JobsMessage.JobResponse(r.seed(), r.step(), leased.position(), data)))
                .exceptionally(JobsProtocol::refusal);
    }

    private record Leased(long position, JobsMessage error) {
    }

    /** Commits the hand-out: the position handed out, or the ERROR saying why none is. */
    private Leased lease(JobRecord job, long step, long position, String holder) {
        if (position != JobWork.ANY_POSITION
                && control.state().workOf(job.id()).results().containsKey(JobWork.key(step, position))) {
            return new Leased(position, null); // answered already: a replay, no lease needed
        }
        try {
            JobWork work = control.submit(new ClusterCommand.JobBatchLeased(job.id(), step, position, holder, leaseMs,
                    clock.getAsLong())).workOf(job.id());
            if (position != JobWork.ANY_POSITION) {
                return new Leased(position, null);
            }
            return work.leases().values().stream().filter(l -> l.holder().equals(holder)).findFirst()
                    .map(l -> new Leased(l.position(), null))
                    .orElseGet(() -> new Leased(0, error(WireError.UNAVAILABLE, "the batch handed out was answered or"
                            + " handed out again before it was generated: ask again")));
        } catch (IllegalArgumentException | IllegalTransitionException refused) {
            JobWork work = control.state().workOf(job.id());
            if (position == JobWork.ANY_POSITION && work.done(job, step) == job.samples()) {
                return new Leased(0, error(WireError.STEP_COMPLETE, "every batch of job " + job.id() + " step "
                        + Long.toUnsignedString(step) + " has a result"));
            }
            return new Leased(0, error(WireError.UNAVAILABLE, refused.getMessage() + nextLeaseEnd(work, step)));
        }
    }

    private String nextLeaseEnd(JobWork work, long step) {
        long now = clock.getAsLong();
        java.util.OptionalLong end = work.leases().values().stream().filter(l -> l.step() == step && !l.expired(now))
                .mapToLong(JobLease::expiresAtMs).min();
        return end.isEmpty() ? "" : "; the next lease ends in " + Math.max(1, (end.getAsLong() - now + 999) / 1000)
                + " s";
    }

    private CompletableFuture<JobsMessage> result(JobsMessage.Result r) {
        Optional<JobRecord> found = job(r.seed());
        if (found.isEmpty()) {
            return done(unknownJob(r.seed()));
        }
        JobRecord job = found.get();
        if (Long.compareUnsigned(r.position(), job.samples()) >= 0) {
            return done(outOfRange(job, r.position()));
        }
        String key = JobWork.key(r.step(), r.position());
        if (control.state().workOf(job.id()).results().containsKey(key)) {
            return done(new JobsMessage.ResultAck(r.seed(), r.step(), r.position(), false));
        }
        return CompletableFuture.supplyAsync(() -> {
            try {
                control.submit(new ClusterCommand.JobResultRecorded(job.id(), r.step(), r.position(), r.data(),
                        clock.getAsLong()));
                return new JobsMessage.ResultAck(r.seed(), r.step(), r.position(), true);
            } catch (IllegalArgumentException | IllegalTransitionException refused) {
                JobWork work = control.state().workOf(job.id());
                if (work.results().containsKey(key)) {
                    return new JobsMessage.ResultAck(r.seed(), r.step(), r.position(), false);
                } else if (!work.leases().containsKey(key)) {
                    return error(WireError.NOT_HANDED_OUT, "no batch of job " + job.id() + " at step "
                            + Long.toUnsignedString(r.step()) + " position " + Long.toUnsignedString(r.position())
                            + " was handed out");
                }
                return error(WireError.RESULTS_FULL, refused.getMessage());
            }
        }, commits).exceptionally(JobsProtocol::refusal);
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
