package io.butterfly.coordinator.jobs;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The RESULTs this replica received, per job, once per (step, position): a repeat is acknowledged and not kept twice
 * (the first one stays). Bounded by the bytes they hold together: past {@code maxBytes} a new result is refused (the
 * client is told, RESULTS_FULL) rather than an old one dropped. Kept in memory (docs/jobs.md says what that loses).
 */
public final class ResultStore {

    /** What became of a result offered. */
    public enum Outcome { STORED, ALREADY_STORED, FULL }

    private record Key(long step, long position) {
    }

    private final long maxBytes;
    private final LongSupplier clock;
    private final Map<String, Map<Key, StoredResult>> byJob = new HashMap<>();
    private long bytes;

    public ResultStore(long maxBytes, LongSupplier clock) {
        this.maxBytes = maxBytes;
        this.clock = clock;
    }

    public synchronized Outcome offer(String jobId, long step, long position, byte[] data) {
        Map<Key, StoredResult> job = byJob.computeIfAbsent(jobId, id -> new LinkedHashMap<>());
        Key key = new Key(step, position);
        if (job.containsKey(key)) {
            return Outcome.ALREADY_STORED;
        }
        if (bytes + data.length > maxBytes) {
            return Outcome.FULL;
        }
        job.put(key, new StoredResult(step, position, data.clone(), clock.getAsLong()));
        bytes += data.length;
        return Outcome.STORED;
    }

    /** The job's results, by step then position (unsigned). */
    public synchronized List<StoredResult> of(String jobId) {
        List<StoredResult> out = new ArrayList<>(byJob.getOrDefault(jobId, Map.of()).values());
        out.sort(Comparator.comparing(StoredResult::step, Long::compareUnsigned)
                .thenComparing(StoredResult::position, Long::compareUnsigned));
        return out;
    }
}
