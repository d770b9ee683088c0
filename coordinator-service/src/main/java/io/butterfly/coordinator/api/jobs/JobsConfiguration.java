package io.butterfly.coordinator.api.jobs;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.tls.ClusterTls;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.config.JobsProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.jobs.JobBatches;
import io.butterfly.coordinator.jobs.JobsProtocol;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Clock;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Batch jobs (docs/jobs.md): the dataset store, the batches, their progress, and the JOBS port when enabled. */
@Configuration
public class JobsConfiguration {

    @Bean
    FileDatasetStore datasetStore(JobsProperties jobs, CoordinatorProperties props) {
        return new FileDatasetStore(jobs.datasetDir(props.dataDir()));
    }

    /** Where the JOBS port's control-log commits wait (never on the event loop). */
    @Bean(destroyMethod = "shutdownNow")
    ExecutorService jobsCommits(JobsProperties jobs) {
        return Executors.newFixedThreadPool(jobs.commitThreads(), DaemonThreads.numbered("jobs-commit"));
    }

    @Bean
    JobsProtocol jobsProtocol(ControlLog control, InferenceService inference, FileDatasetStore datasets,
                              JobsProperties jobs, CoordinatorProperties props, Clock clock,
                              @Qualifier("jobsCommits") ExecutorService commits) {
        return new JobsProtocol(control, new JobBatches(inference, datasets, props.maxPromptChars()),
                commits, clock::millis, jobs.lease().toMillis(), props.nodeId());
    }

    @Bean
    JobsMetrics jobsMetrics(ControlLog control, ObjectProvider<MeterRegistry> meters, Clock clock) {
        return new JobsMetrics(control, meters.getIfAvailable(SimpleMeterRegistry::new), clock);
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnProperty(name = "butterfly.coordinator.jobs.enabled", havingValue = "true")
    JobsServer jobsServer(JobsProperties jobs, JobsProtocol protocol, ClusterTls tls) {
        return JobsServer.start(jobs.host(), jobs.port(), jobs.plaintext() ? null : tls,
                (int) jobs.maxFrameBytes().toBytes(), protocol);
    }
}
