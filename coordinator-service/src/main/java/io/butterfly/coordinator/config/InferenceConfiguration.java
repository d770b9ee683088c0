package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.FailedStageAborts;
import io.butterfly.coordinator.inference.GroupCommitTaskJournal;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.OrphanedTasks;
import io.butterfly.coordinator.inference.Pipeline;
import io.butterfly.coordinator.model.ModelCatalog;
import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Generation on this replica: the inference service, the journal recording its tasks, and what ends its tasks when
 * their stages or runner fail.
 */
@Configuration
public class InferenceConfiguration {

    /** Closed after the inference service (which depends on it) and before the control log (which it depends on). */
    @Bean(destroyMethod = "close")
    GroupCommitTaskJournal taskJournal(ControlLog control, CoordinatorProperties props, TaskJournalProperties journal,
                                       Clock clock) {
        return GroupCommitTaskJournal.start(control, journal.journalSettings(props.nodeId()), clock);
    }

    @Bean
    InferenceService inferenceService(CoordinatorProperties props, ControlLog control, GroupCommitTaskJournal journal,
                                      ModelCatalog catalog, Pipeline pipeline, Clock clock) {
        return new InferenceService(props.inference(), control, journal, catalog, pipeline, clock);
    }

    @Bean
    OrphanedTasks orphanedTasks(ControlLog control, InferenceService inference, GroupCommitTaskJournal journal,
                                CoordinatorProperties props, Clock clock) {
        return new OrphanedTasks(control, inference, journal, props.taskTimeout(), clock);
    }

    @Bean
    FailedStageAborts failedStageAborts(ControlLog control, Pipeline pipeline) {
        return new FailedStageAborts(control, pipeline);
    }
}
