package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.Transcript;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The transcripts of the tasks this replica ran (docs/verified-execution.md), newest {@code capacity} by start: a
 * transcript is this replica's record of what the stages computed for it, not replicated (the digest a client
 * compares is in it; the tokens, which any replica holds, are the result).
 */
final class Transcripts {

    private final int capacity;
    private final Map<String, Transcript> byTask;

    Transcripts(int capacity) {
        this.capacity = capacity;
        this.byTask = new LinkedHashMap<>(16, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Transcript> eldest) {
                return size() > Transcripts.this.capacity;
            }
        };
    }

    synchronized void keep(String taskId, Transcript transcript) {
        byTask.remove(taskId); // a task run again here (taken over) counts as new
        byTask.put(taskId, transcript);
    }

    synchronized Optional<Transcript> get(String taskId) {
        return Optional.ofNullable(byTask.get(taskId));
    }
}
