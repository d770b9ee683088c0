package io.butterfly.coordinator.api.jobs;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.JobRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.jobs.JobProgress;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToDoubleFunction;

/**
 * Batch jobs' progress on {@code /actuator/prometheus} (docs/jobs.md): per job, dataset positions done, leased and
 * pending, results committed and results per second, each read from the replicated state when scraped (so every
 * replica reports the same). A job's gauges are registered when this replica first sees it.
 */
final class JobsMetrics implements ControlLog.AppliedListener {

    private final ControlLog control;
    private final MeterRegistry registry;
    private final Clock clock;
    private final Set<String> registered = ConcurrentHashMap.newKeySet();

    JobsMetrics(ControlLog control, MeterRegistry registry, Clock clock) {
        this.control = control;
        this.registry = registry;
        this.clock = clock;
        control.state().jobs().keySet().forEach(this::register);
        control.onApplied(this);
    }

    @Override
    public void applied(ClusterState before, ClusterState after, io.butterfly.coordinator.cluster.ClusterCommand command,
                        long index) {
        if (after.jobs().size() != registered.size()) {
            after.jobs().keySet().forEach(this::register);
        }
    }

    private void register(String jobId) {
        if (!registered.add(jobId)) {
            return;
        }
        for (String state : new String[] {"done", "leased", "pending"}) {
            gauge("butterfly.jobs.positions", jobId, p -> switch (state) {
                case "done" -> p.done();
                case "leased" -> p.leased();
                default -> p.pending();
            }, "dataset positions of the job's begun steps, by state", "state", state);
        }
        gauge("butterfly.jobs.results", jobId, JobProgress::results, "RESULTs committed to the control log");
        gauge("butterfly.jobs.result_bytes", jobId, JobProgress::resultBytes,
                "what the job's results count against its max_result_bytes");
        gauge("butterfly.jobs.results_per_second", jobId, JobProgress::resultsPerSecond,
                "results committed per second over the last minute");
    }

    private void gauge(String name, String jobId, ToDoubleFunction<JobProgress> value, String description,
                       String... tags) {
        Gauge.builder(name, () -> {
            JobRecord job = control.state().jobs().get(jobId);
            return job == null ? 0 : value.applyAsDouble(JobProgress.of(job, control.state().workOf(jobId),
                    clock.millis()));
        }).tag("job", jobId).tags(tags).description(description).register(registry);
    }
}
