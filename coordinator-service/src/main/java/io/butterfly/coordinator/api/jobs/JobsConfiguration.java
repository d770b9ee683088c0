package io.butterfly.coordinator.api.jobs;

import io.butterfly.common.tls.ClusterTls;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.config.JobsProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.jobs.JobBatches;
import io.butterfly.coordinator.jobs.JobsProtocol;
import io.butterfly.coordinator.jobs.ResultStore;
import java.time.Clock;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Batch jobs (docs/jobs.md): the dataset store, the batches, the results, and the JOBS port when enabled. */
@Configuration
public class JobsConfiguration {

    @Bean
    FileDatasetStore datasetStore(JobsProperties jobs, CoordinatorProperties props) {
        return new FileDatasetStore(jobs.datasetDir(props.dataDir()));
    }

    @Bean
    ResultStore resultStore(JobsProperties jobs, Clock clock) {
        return new ResultStore(jobs.maxResultBytes().toBytes(), clock::millis);
    }

    @Bean
    JobsProtocol jobsProtocol(ControlLog control, InferenceService inference, FileDatasetStore datasets,
                              ResultStore results, CoordinatorProperties props) {
        return new JobsProtocol(control, new JobBatches(inference, datasets, props.maxPromptChars()), results);
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnProperty(name = "butterfly.coordinator.jobs.enabled", havingValue = "true")
    JobsServer jobsServer(JobsProperties jobs, JobsProtocol protocol, ClusterTls tls) {
        return JobsServer.start(jobs.host(), jobs.port(), jobs.plaintext() ? null : tls,
                (int) jobs.maxFrameBytes().toBytes(), protocol);
    }
}
