package io.butterfly.coordinator.cluster;

import java.util.BitSet;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What has become of a job's batches (docs/jobs.md), as every replica holds it: the batches handed out and not
 * answered (leases), the RESULTs committed (once per step and position), and per step the frontier below which every
 * batch was handed out at least once. Pure and immutable, changed only by {@link ClusterReducer}; bounded: at most
 * {@link #MAX_LEASES} leases, and results up to the job's {@code maxResultBytes} (each counted with
 * {@link #RESULT_OVERHEAD_BYTES}, so empty results are bounded too). Maps are keyed by {@link #key}: JSON snapshots
 * keep string keys only.
 *
 * @param leases      unanswered hand-outs by key
 * @param results     committed RESULTs by key, in the order committed
 * @param frontiers   per step (unsigned decimal): the next batch position never handed out by an "any batch" request
 * @param resultBytes what the results count against the job's budget
 */
public record JobWork(Map<String, JobLease> leases, Map<String, JobResult> results, Map<String, Long> frontiers,
                      long resultBytes) {

    /** Leases a job may have at once; a new batch is refused beyond (an expired one is handed out again first). */
    public static final int MAX_LEASES = 4096;
    /** What a result costs against the budget besides its bytes: its key and timestamps. */
    public static final int RESULT_OVERHEAD_BYTES = 64;
    /** The position a JOB_REQUEST names to get any batch: the coordinator chooses (u64 max on the wire). */
    public static final long ANY_POSITION = -1L;

    public static final JobWork EMPTY = new JobWork(Map.of(), Map.of(), Map.of(), 0);

    public JobWork {
        leases = leases == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(leases));
        results = results == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(results));
        frontiers = frontiers == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(frontiers));
    }

    public static String key(long step, long position) {
        return Long.toUnsignedString(step) + "/" + Long.toUnsignedString(position);
    }

    /** The first dataset position after the batch at {@code position}. */
    public static long batchEnd(JobRecord job, long position) {
        return Math.min(job.samples(), position + job.batchSize());
    }

    /**
     * Hands out a batch of {@code step} to {@code holder} for {@code leaseMs}: the one at {@code position}, or with
     * {@link #ANY_POSITION} the coordinator's choice, an expired lease of the step first (lowest position), else the
     * first batch never handed out. A batch already answered is not leased (a replay needs none).
     *
     * @throws IllegalArgumentException if no batch can be handed out: every one of the step is answered or leased
     *                                  or the job has {@link #MAX_LEASES} leases
     */
    JobWork lease(JobRecord job, long step, long position, String holder, long atMs, long leaseMs) {
        long at = position;
        if (position == ANY_POSITION) {
            at = expiredLease(step, atMs);
            if (at == ANY_POSITION) {
                at = frontier(job, step);
                if (at >= job.samples()) {
                    throw new IllegalArgumentException("every batch of job " + job.id() + " step " + Long.toUnsignedString(step)
                            + " is answered or handed out");
                }
            }
        } else if (Long.compareUnsigned(position, job.samples()) >= 0) {
            throw new IllegalArgumentException("position " + Long.toUnsignedString(position) + " is past job "
                    + job.id() + "'s " + job.samples() + " samples");
        }
        String k = key(step, at);
        if (results.containsKey(k)) {
            return this;
        }
        JobLease before = leases.get(k);
        if (before == null && leases.size() >= MAX_LEASES) {
            throw new IllegalArgumentException("job " + job.id() + " has " + MAX_LEASES
                    + " batches handed out and unanswered: retry once one is answered or its lease ends");
        }
        Map<String, JobLease> nextLeases = new LinkedHashMap<>(leases);
        nextLeases.put(k, new JobLease(step, at, holder, atMs, atMs + leaseMs, before == null ? 1 : before.handouts() + 1));
        Map<String, Long> nextFrontiers = frontiers;
        if (position == ANY_POSITION && at == frontier(job, step)) {
            nextFrontiers = new LinkedHashMap<>(frontiers);
            nextFrontiers.put(Long.toUnsignedString(step), at + job.batchSize());
        }
        return new JobWork(nextLeases, results, nextFrontiers, resultBytes);
    }

    /**
     * Commits a RESULT: once per (step, position), only for a batch handed out, within the job's budget. The batch's
     * lease ends with it.
     *
     * @throws IllegalArgumentException if one is committed already, the batch was
     *                                  never handed out, or the job's results budget would be exceeded
     */
    JobWork record(JobRecord job, long step, long position, byte[] data, long atMs) {
        String k = key(step, position);
        if (results.containsKey(k)) {
            throw new IllegalArgumentException("job " + job.id() + " has a result for " + where(step, position) + " already");
        }
        if (!leases.containsKey(k)) {
            throw new IllegalArgumentException("job " + job.id() + "'s batch at " + where(step, position)
                    + " was never handed out");
        }
        long cost = (long) data.length + RESULT_OVERHEAD_BYTES;
        if (resultBytes + cost > job.maxResultBytes()) {
            throw new IllegalArgumentException("job " + job.id() + "'s results reached its max_result_bytes "
                    + job.maxResultBytes());
        }
        Map<String, JobLease> nextLeases = new LinkedHashMap<>(leases);
        nextLeases.remove(k);
        Map<String, JobResult> nextResults = new LinkedHashMap<>(results);
        nextResults.put(k, new JobResult(step, position, data, atMs));
        return new JobWork(nextLeases, nextResults, frontiers, resultBytes + cost);
    }

    private static String where(long step, long position) {
        return "step " + Long.toUnsignedString(step) + " position " + Long.toUnsignedString(position);
    }

    /** The lowest position of the step whose lease ended by {@code atMs}, or {@link #ANY_POSITION}. */
    private long expiredLease(long step, long atMs) {
        long found = ANY_POSITION;
        for (JobLease l : leases.values()) {
            if (l.step() == step && l.expired(atMs) && (found == ANY_POSITION || l.position() < found)) {
                found = l.position();
            }
        }
        return found;
    }

    /** The first batch of the step never handed out: handed-out batches stay leased or answered, so it only grows. */
    private long frontier(JobRecord job, long step) {
        long at = frontiers.getOrDefault(Long.toUnsignedString(step), 0L);
        while (at < job.samples() && (leases.containsKey(key(step, at)) || results.containsKey(key(step, at)))) {
            at += job.batchSize();
        }
        return at;
    }

    /** Positions of the step with neither a result nor a live lease (an expired lease's positions are pending). */
    public long pending(JobRecord job, long step, long nowMs) {
        return job.samples() - done(job, step) - leased(job, step, nowMs);
    }

    /** Dataset positions of the step in a batch with a result (each counted once, batches at any position). */
    public long done(JobRecord job, long step) {
        return answered(job, step).cardinality();
    }

    /** Dataset positions of the step in a batch handed out under a live lease, and in none with a result. */
    public long leased(JobRecord job, long step, long nowMs) {
        BitSet leased = new BitSet();
        leases.values().stream().filter(l -> l.step() == step && !l.expired(nowMs))
                .forEach(l -> leased.set((int) l.position(), (int) batchEnd(job, l.position())));
        leased.andNot(answered(job, step));
        return leased.cardinality();
    }

    private BitSet answered(JobRecord job, long step) {
        BitSet done = new BitSet();
        results.values().stream().filter(r -> r.step() == step)
                .forEach(r -> done.set((int) r.position(), (int) batchEnd(job, r.position())));
        return done;
    }

    /** The steps with a lease or a result, in unsigned order. */
    public java.util.List<Long> steps() {
        java.util.TreeSet<Long> steps = new java.util.TreeSet<>(Long::compareUnsigned);
        leases.values().forEach(l -> steps.add(l.step()));
        results.values().forEach(r -> steps.add(r.step()));
        return java.util.List.copyOf(steps);
    }
}
