package io.butterfly.coordinator.config;

import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

/**
 * The cluster as this replica sees it, on {@code /actuator/prometheus} (the Grafana dashboard's Raft and node panels):
 * the system state (one gauge per state, 1 for the current one), workers per state, the epoch, and the control log's
 * term, leadership and applied index. Each is read from the replicated state when scraped.
 */
final class ClusterMetrics implements MeterBinder {

    private final ControlLog control;

    ClusterMetrics(ControlLog control) {
        this.control = control;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (SystemState s : SystemState.values()) {
            Gauge.builder("butterfly.system_state", () -> control.state().system() == s ? 1 : 0).tag("state", s.name())
                    .description("1 for the system's current state (docs/state-machines.md §1), 0 for the others")
                    .register(registry);
        }
        for (WorkerState s : WorkerState.values()) {
            Gauge.builder("butterfly.workers", () -> control.state().nodes().values().stream()
                            .map(NodeRecord::state).filter(s::equals).count()).tag("state", s.name())
                    .description("workers in each state").register(registry);
        }
        Gauge.builder("butterfly.epoch", () -> control.state().epoch())
                .description("the assignment epoch (grows with every reassignment)").register(registry);
        Gauge.builder("butterfly.raft.term", () -> control.raftStatus().term())
                .description("the control log's Raft term as this replica knows it").register(registry);
        Gauge.builder("butterfly.raft.leader", () -> "LEADER".equals(control.raftStatus().role()) ? 1 : 0)
                .description("1 while this replica leads the control log's Raft group").register(registry);
        Gauge.builder("butterfly.raft.applied_index", () -> control.raftStatus().lastAppliedIndex())
                .description("the last control-log entry this replica applied").register(registry);
    }
}
