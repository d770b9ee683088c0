package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.ControlLogTaskJournal;
import io.butterfly.coordinator.inference.FailedStageAborts;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.OrphanedTasks;
import io.butterfly.coordinator.inference.Pipeline;
import io.butterfly.coordinator.inference.TaskJournal;
import io.butterfly.coordinator.model.ModelCatalog;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Generation on this replica: the engine behind the inference service, and what ends its tasks when stages fail. */
@Configuration
public class InferenceConfiguration {

    @Bean
    PrometheusServingMetrics servingMetrics(MeterRegistry registry) {
        return new PrometheusServingMetrics(registry);
    }

    @Bean(destroyMethod = "close")
    InferenceService inferenceService(CoordinatorProperties props, EngineProperties engine, ControlRaftProperties raft,
                                      ControlLog control, ModelCatalog catalog, Pipeline pipeline,
                                      PrometheusServingMetrics metrics, Clock clock) {
        long startedAtMs = clock.millis(); // the tasks this replica's start owns carry it (see OrphanedTasks)
        TaskJournal journal = new ControlLogTaskJournal(control, props.nodeId(), startedAtMs);
        InferenceService inference = new InferenceService(props.inference(Math.max(1, raft.peers().size())),
                engine.scheduler(), control, catalog, pipeline, journal, metrics, clock, startedAtMs);
        metrics.bind(inference);
        return inference;
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
