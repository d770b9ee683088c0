package io.butterfly.coordinator.jobs;

import io.butterfly.coordinator.cluster.JobRecord;
import io.butterfly.coordinator.cluster.JobWork;

/**
 * How far a job is (docs/jobs.md, progress), from the replicated state, so every replica says the same: dataset
 * positions whose batch has a result (done), is handed out under a live lease (leased), or neither (pending), summed
 * over the steps begun (step 0 alone before any), and the results committed per second over the last minute.
 *
 * @param steps          the steps begun (a batch of them handed out), at least 1
 * @param done           positions with a result
 * @param leased         positions handed out whose lease has not ended
 * @param pending        the rest of the steps begun
 * @param results        results committed
 * @param resultBytes    what they count against the job's budget
 * @param resultsPerSecond results committed in the last {@link #RATE_WINDOW_MS}, per second
 */
public record JobProgress(long steps, long done, long leased, long pending, long results, long resultBytes,
                          double resultsPerSecond) {

    public static final long RATE_WINDOW_MS = 60_000;

    public static JobProgress of(JobRecord job, JobWork work, long nowMs) {
        long done = 0;
        long leased = 0;
        var steps = work.steps();
        for (long step : steps) {
            done += work.done(job, step);
            leased += work.leased(job, step, nowMs);
        }
        long begun = Math.max(1, steps.size());
        long recent = work.results().values().stream().filter(r -> r.recordedAtMs() > nowMs - RATE_WINDOW_MS).count();
        return new JobProgress(begun, done, leased, begun * job.samples() - done - leased, work.results().size(),
                work.resultBytes(), recent * 1000.0 / RATE_WINDOW_MS);
    }
}
