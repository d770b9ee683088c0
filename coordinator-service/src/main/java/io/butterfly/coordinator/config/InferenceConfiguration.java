package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.FailedStageAborts;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.OrphanedTasks;
import io.butterfly.coordinator.inference.Pipeline;
import io.butterfly.coordinator.model.ModelCatalog;
import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Generation on this replica: the inference service and what ends its tasks when their stages or runner fail. */
@Configuration
public class InferenceConfiguration {

    @Bean
    InferenceService inferenceService(CoordinatorProperties props, ControlLog control, ModelCatalog catalog,
                                      Pipeline pipeline, Clock clock) {
        return new InferenceService(props.inference(), control, catalog, pipeline, clock);
    }

    @Bean
    OrphanedTasks orphanedTasks(ControlLog control, InferenceService inference, CoordinatorProperties props,
                                Clock clock) {
        return new OrphanedTasks(control, inference, props.nodeId(), props.taskTimeout(), clock);
    }

    @Bean
    FailedStageAborts failedStageAborts(ControlLog control, Pipeline pipeline) {
        return new FailedStageAborts(control, pipeline);
    }
}
