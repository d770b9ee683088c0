package io.butterfly.coordinator.statemachine;

import java.util.List;

/**
 * The transition tables of docs/state-machines.md §1.3 and §2.1-2.5, exactly as the spec lists them (edges of the
 * component diagrams where the spec has no table), and the forbidden transitions of docs/state-machines.md §1.4 with their reasons. The
 * tables include states the current implementation does not enter (COMPUTING/COMMITTING: tasks run while the system
 * is READY, and only a log written before tasks were recorded in batches still passes through them; Byzantine phases).
 */
public final class StateMachines {

    private StateMachines() {
    }

    private static final String RE_BOOTSTRAP = "Cannot re-bootstrap running system—must shutdown first";

    public static final TransitionTable<SystemState> SYSTEM = system();
    public static final TransitionTable<CoordinatorState> COORDINATOR = coordinator();
    public static final TransitionTable<WorkerState> WORKER = worker();
    public static final TransitionTable<TaskState> TASK = task();
    public static final TransitionTable<ConnectionState> CONNECTION = connection();
    public static final TransitionTable<PartitionState> PARTITION = partition();

    public static final List<TransitionTable<?>> ALL = List.of(SYSTEM, COORDINATOR, WORKER, TASK, CONNECTION, PARTITION);

    private static <S extends Enum<S>> Transition<S> t(S from, S to, String trigger) {
        return new Transition<>(from, to, trigger);
    }

    private static <S extends Enum<S>> ForbiddenTransition<S> no(S from, S to, String reason) {
        return new ForbiddenTransition<>(from, to, reason);
    }

    private static TransitionTable<SystemState> system() {
        return new TransitionTable<>("system", SystemState.class, SystemState.UNINITIALIZED, List.of(
                t(SystemState.UNINITIALIZED, SystemState.BOOTSTRAPPING, "bootstrap()"),
                t(SystemState.BOOTSTRAPPING, SystemState.READY, "quorum_established()"),
                t(SystemState.READY, SystemState.COMPUTING, "begin_inference()"),
                t(SystemState.COMPUTING, SystemState.DEGRADED, "failure_detected()"),
                t(SystemState.COMPUTING, SystemState.COMMITTING, "all_phases_complete()"),
                t(SystemState.COMMITTING, SystemState.READY, "result_committed()"),
                t(SystemState.DEGRADED, SystemState.READY, "recovery_complete()"),
                t(SystemState.DEGRADED, SystemState.SHUTDOWN, "quorum_lost()"),
                t(SystemState.COMPUTING, SystemState.SHUTDOWN, "shutdown_initiated()"),
                t(SystemState.READY, SystemState.SHUTDOWN, "shutdown_initiated()"),
                t(SystemState.SHUTDOWN, SystemState.TERMINATED, "cleanup_complete()")),
                List.of(
                        no(SystemState.UNINITIALIZED, SystemState.READY,
                                "Skips cluster formation—no coordinator, no quorum"),
                        no(SystemState.COMPUTING, SystemState.READY,
                                "Skips result commitment—would lose computation results"),
                        no(SystemState.DEGRADED, SystemState.COMPUTING,
                                "Cannot start new work during recovery—violates safety"),
                        no(SystemState.COMMITTING, SystemState.DEGRADED,
                                "Agreement phase must complete atomically—partial commit forbidden"),
                        no(SystemState.TERMINATED, null,
                                "Terminal state—resurrection impossible without reboot"),
                        // UNINITIALIZED -> BOOTSTRAPPING is the table's bootstrap(); "Any" means any running state.
                        no(SystemState.BOOTSTRAPPING, SystemState.BOOTSTRAPPING, RE_BOOTSTRAP),
                        no(SystemState.READY, SystemState.BOOTSTRAPPING, RE_BOOTSTRAP),
                        no(SystemState.COMPUTING, SystemState.BOOTSTRAPPING, RE_BOOTSTRAP),
                        no(SystemState.COMMITTING, SystemState.BOOTSTRAPPING, RE_BOOTSTRAP),
                        no(SystemState.DEGRADED, SystemState.BOOTSTRAPPING, RE_BOOTSTRAP),
                        no(SystemState.SHUTDOWN, SystemState.BOOTSTRAPPING, RE_BOOTSTRAP)));
    }

    private static TransitionTable<CoordinatorState> coordinator() {
        return new TransitionTable<>("coordinator", CoordinatorState.class, CoordinatorState.ELECTED, List.of(
                t(CoordinatorState.ELECTED, CoordinatorState.MONITORING, "initialize_cluster()"),
                t(CoordinatorState.MONITORING, CoordinatorState.ASSIGNING, "request_received()"),
                t(CoordinatorState.ASSIGNING, CoordinatorState.COORDINATING, "assignments_acked()"),
                t(CoordinatorState.COORDINATING, CoordinatorState.AGGREGATING, "computation_complete()"),
                t(CoordinatorState.AGGREGATING, CoordinatorState.COMMITTING, "results_collected()"),
                t(CoordinatorState.COMMITTING, CoordinatorState.MONITORING, "commit_finalized()"),
                // docs/state-machines.md §2.1 draws failure_detected() off the working loop; COMMITTING is excluded like §1.4's
                // COMMITTING -> DEGRADED (agreement completes atomically). docs/state-machines.md §2 lists no forbidden transitions for components.
                t(CoordinatorState.MONITORING, CoordinatorState.RECOVERING, "failure_detected()"),
                t(CoordinatorState.ASSIGNING, CoordinatorState.RECOVERING, "failure_detected()"),
                t(CoordinatorState.COORDINATING, CoordinatorState.RECOVERING, "failure_detected()"),
                t(CoordinatorState.AGGREGATING, CoordinatorState.RECOVERING, "failure_detected()"),
                t(CoordinatorState.RECOVERING, CoordinatorState.MONITORING, "recovery_complete()")),
                List.of());
    }

    private static TransitionTable<WorkerState> worker() {
        return new TransitionTable<>("worker", WorkerState.class, WorkerState.INITIALIZED, List.of(
                t(WorkerState.INITIALIZED, WorkerState.JOINED, "coordinator_connected()"),
                t(WorkerState.JOINED, WorkerState.READY, "model_partition_loaded()"),
                t(WorkerState.READY, WorkerState.COMPUTING, "work_assigned()"),
                t(WorkerState.COMPUTING, WorkerState.AGGREGATING, "local_computation_done()"),
                t(WorkerState.AGGREGATING, WorkerState.COMMITTING, "barrier_released()"),
                t(WorkerState.COMMITTING, WorkerState.JOINED, "commit_finalized()"),
                t(WorkerState.JOINED, WorkerState.SUSPECT, "failure_detected()"),
                t(WorkerState.READY, WorkerState.SUSPECT, "failure_detected()"),
                t(WorkerState.COMPUTING, WorkerState.SUSPECT, "failure_detected()"),
                t(WorkerState.AGGREGATING, WorkerState.SUSPECT, "failure_detected()"),
                t(WorkerState.COMMITTING, WorkerState.SUSPECT, "failure_detected()"),
                t(WorkerState.SUSPECT, WorkerState.FAILED, "confirm_failure()")),
                List.of());
    }

    private static TransitionTable<TaskState> task() {
        return new TransitionTable<>("task", TaskState.class, TaskState.QUEUED, List.of(
                t(TaskState.QUEUED, TaskState.SCHEDULED, "coordinator_accepts()"),
                t(TaskState.SCHEDULED, TaskState.DISPATCHED, "assignment_created()"),
                t(TaskState.DISPATCHED, TaskState.EXECUTING, "workers_acknowledged()"),
                t(TaskState.EXECUTING, TaskState.FAILED, "unrecoverable_error()"),
                t(TaskState.EXECUTING, TaskState.VALIDATING, "all_phases_complete()"),
                t(TaskState.VALIDATING, TaskState.COMPLETED, "quorum_agrees()")),
                List.of());
    }

    private static TransitionTable<ConnectionState> connection() {
        return new TransitionTable<>("connection", ConnectionState.class, ConnectionState.CONNECTING, List.of(
                t(ConnectionState.CONNECTING, ConnectionState.ESTABLISHED, "handshake_complete()"),
                t(ConnectionState.ESTABLISHED, ConnectionState.ACTIVE, "data_flowing()"),
                t(ConnectionState.ACTIVE, ConnectionState.ESTABLISHED, "keepalive_ok()"),
                t(ConnectionState.ACTIVE, ConnectionState.IDLE, "no_activity_timeout()"),
                t(ConnectionState.IDLE, ConnectionState.ACTIVE, "activity_resumed()"),
                t(ConnectionState.IDLE, ConnectionState.SUSPECTED, "keepalive_failed()"),
                t(ConnectionState.SUSPECTED, ConnectionState.TERMINATED, "reconnect() / timeout()")),
                List.of());
    }

    private static TransitionTable<PartitionState> partition() {
        // PartitionState.FAILED is implementation-only (a failed load); docs/state-machines.md §2.5 has no edge for it.
        return new TransitionTable<>("partition", PartitionState.class, PartitionState.UNLOADED, List.of(
                t(PartitionState.UNLOADED, PartitionState.DOWNLOADING, "download_initiated()"),
                t(PartitionState.DOWNLOADING, PartitionState.VALIDATING, "download_complete()"),
                t(PartitionState.VALIDATING, PartitionState.LOADED, "validation_passed()"),
                t(PartitionState.LOADED, PartitionState.WARMING, "warmup_initiated()"),
                t(PartitionState.WARMING, PartitionState.READY, "warmup_complete()"),
                t(PartitionState.READY, PartitionState.IN_USE, "assigned()"),
                t(PartitionState.IN_USE, PartitionState.READY, "released()"),
                t(PartitionState.READY, PartitionState.EVICTED, "evict()")),
                List.of());
    }
}
