package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.PrefixCacheReports;
import io.butterfly.coordinator.inference.FailedStageAborts;
import io.butterfly.coordinator.inference.GroupCommitTaskJournal;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.audit.StepAuditor;
import io.butterfly.coordinator.reconcile.Workers;
import io.butterfly.coordinator.inference.OrphanedTasks;
import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.inference.RequestTracing;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Generation on this replica: the engine behind the inference service, the journal recording its tasks, and what
 * ends its tasks when their stages or runner fail.
 */
@Configuration
public class InferenceConfiguration {

    @Bean
    PrometheusServingMetrics servingMetrics(MeterRegistry registry) {
        return new PrometheusServingMetrics(registry);
    }

    /** A trace per request through every stage (docs/observability.md); Micrometer's no-op tracer traces nothing. */
    @Bean
    RequestTracing requestTracing(Tracer tracer, Propagator propagator) {
        return new MicrometerRequestTracing(tracer, propagator);
    }

    /** Closed after the inference service (which depends on it) and before the control log (which it depends on). */
    @Bean(destroyMethod = "close")
    GroupCommitTaskJournal taskJournal(ControlLog control, CoordinatorProperties props, TaskJournalProperties journal,
                                       PrometheusServingMetrics metrics, Clock clock) {
        GroupCommitTaskJournal started = GroupCommitTaskJournal.start(control, journal.journalSettings(props.nodeId()), clock);
        metrics.bind(started);
        return started;
    }

    @Bean(destroyMethod = "close")
    InferenceService inferenceService(CoordinatorProperties props, EngineProperties engine, ControlRaftProperties raft,
                                      ControlLog control, GroupCommitTaskJournal journal, ModelCatalog catalog,
                                      Pipeline pipeline, PrometheusServingMetrics metrics, RequestTracing tracing,
                                      Clock clock, PrefixCacheReports prefixCaches) {
        InferenceService inference = new InferenceService(props.inference(Math.max(1, raft.peers().size()),
                engine.recoveryTimeout()).withTokensPerMinutePerKey(engine.tokensPerMinutePerKey()), engine.scheduler(),
                control, catalog, pipeline, journal, metrics, tracing, clock);
        metrics.bind(inference);
        inference.prefixCaching(prefixCaches::enabled);
        return inference;
    }

    @Bean
    OrphanedTasks orphanedTasks(ControlLog control, InferenceService inference, GroupCommitTaskJournal journal,
                                CoordinatorProperties props, EngineProperties engine, Clock clock) {
        return new OrphanedTasks(control, inference, journal, props.taskTimeout(), engine.recoveryTimeout(), clock);
    }

    @Bean
    FailedStageAborts failedStageAborts(ControlLog control, Pipeline pipeline) {
        return new FailedStageAborts(control, pipeline);
    }

    /** Audits steps on spares holding the same layers again (docs/verified-execution.md#audits); 0 %: none. */
    @Bean(destroyMethod = "close")
    StepAuditor stepAuditor(AuditProperties audit, Pipeline pipeline, Workers workers, ControlLog control,
                            InferenceService inference) {
        StepAuditor auditor = new StepAuditor(audit.settings(), pipeline, workers, control);
        if (audit.fraction() > 0) {
            inference.audit(auditor);
        }
        return auditor;
    }
}
