package io.butterfly.coordinator.config;

import io.butterfly.coordinator.inference.GroupCommitTaskJournal;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How this replica records its tasks in the control log (group commit, off the request's path).
 *
 * @param flushInterval    how long a task's start, pause or end waits for other events to share its log entry
 * @param progressInterval how long a task's new tokens wait (see {@link GroupCommitTaskJournal.Settings})
 * @param maxBatch         the most task events in one log entry
 * @param maxPending       the most task events waiting while the control log cannot commit; more are dropped
 */
@ConfigurationProperties("butterfly.coordinator.task-journal")
public record TaskJournalProperties(
        @DefaultValue("20ms") Duration flushInterval,
        @DefaultValue("250ms") Duration progressInterval,
        @DefaultValue("256") int maxBatch,
        @DefaultValue("20000") int maxPending) {

    public GroupCommitTaskJournal.Settings journalSettings(String replicaId) {
        return new GroupCommitTaskJournal.Settings(replicaId, flushInterval, progressInterval, maxBatch, maxPending);
    }
}
