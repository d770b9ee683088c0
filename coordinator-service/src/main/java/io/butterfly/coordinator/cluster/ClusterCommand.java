package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import java.util.List;
import java.util.Objects;

/**
 * Everything that changes the cluster state, as log entries. Each variant carries the time it was
 * issued ({@code atMs}, Unix epoch milliseconds) so replaying the log yields the same state.
 */
public sealed interface ClusterCommand {

    long atMs();

    /** Starts cluster formation for one model with the expected number of workers. */
    record Bootstrap(String modelId, int expectedWorkers, long atMs) implements ClusterCommand {
        public Bootstrap {
            Objects.requireNonNull(modelId, "modelId");
            if (expectedWorkers < 1) {
                throw new IllegalArgumentException("expectedWorkers must be at least 1, was " + expectedWorkers);
            }
        }
    }

    /** The coordinator fetched and verified the model manifest; the merkle root pins the weights served. */
    record ModelResolved(String modelId, String merkleRoot, long atMs) implements ClusterCommand {
        public ModelResolved {
            Objects.requireNonNull(modelId, "modelId");
            Objects.requireNonNull(merkleRoot, "merkleRoot");
        }
    }

    /** A worker passed admission (discovery) and is recorded as a cluster member. */
    record NodeJoined(NodeInfo info, long atMs) implements ClusterCommand {
        public NodeJoined {
            Objects.requireNonNull(info, "info");
        }
    }

    /**
     * A new plan: the stages in pipeline order, fenced by an epoch greater than the current one.
     *
     * @param reason why the leader planned (the bootstrap, a lost stage, a drain); empty in entries written before
     */
    record PartitionsAssigned(long epoch, List<StageAssignment> stages, String reason, long atMs)
            implements ClusterCommand {
        public PartitionsAssigned {
            stages = List.copyOf(stages);
            reason = Objects.requireNonNullElse(reason, "");
        }

        public PartitionsAssigned(long epoch, List<StageAssignment> stages, long atMs) {
            this(epoch, stages, "", atMs);
        }
    }

    /** A worker's load progress in one of the load phases (DOWNLOADING ... WARMING). */
    record LoadProgressed(String nodeId, long epoch, PartitionState phase, double progress, String currentFile,
                          long atMs) implements ClusterCommand {
        public LoadProgressed {
            Objects.requireNonNull(nodeId, "nodeId");
            Objects.requireNonNull(phase, "phase");
        }
    }

    /**
     * A worker's partition is loaded, verified and warm.
     *
     * @param kvCacheBudgetBytes the most memory the worker's KV caches may take together, as it reported it with
     *                           READY (the scheduler reserves against it); 0: unknown (not reported) or no limit
     */
    record LoadCompleted(String nodeId, long epoch, String partitionChecksum, long kvCacheBudgetBytes, long atMs)
            implements ClusterCommand {
        public LoadCompleted {
            Objects.requireNonNull(nodeId, "nodeId");
            if (kvCacheBudgetBytes < 0) {
                throw new IllegalArgumentException("kvCacheBudgetBytes must not be negative, was " + kvCacheBudgetBytes);
            }
        }

        /** Without a KV-cache budget (0: unknown), as entries written before workers reported one read. */
        public LoadCompleted(String nodeId, long epoch, String partitionChecksum, long atMs) {
            this(nodeId, epoch, partitionChecksum, 0, atMs);
        }
    }

    /** A worker could not load its partition (or never accepted the assignment). */
    record LoadFailed(String nodeId, long epoch, String errorCode, String errorMessage, long atMs)
            implements ClusterCommand {
        public LoadFailed {
            Objects.requireNonNull(nodeId, "nodeId");
        }
    }

    /** The cluster configuration changed (docs/bootstrap-protocol.md §5.3 ConfigChange): committed at bootstrap and when membership changes. */
    record ConfigChange(ClusterConfig config, long atMs) implements ClusterCommand {
        public ConfigChange {
            Objects.requireNonNull(config, "config");
        }
    }

    /**
     * Tasks are recorded in batches now ({@link TasksRecorded}); this command, {@link TaskFinished} and
     * {@link TaskFailed} are no longer written, and apply as they always did to a log or snapshot written before, so
     * that every replica replays such a log to the same state (a task submitted so still moves READY to COMPUTING).
     *
     * <p>An inference task entered the pipeline, run by replica {@code owner} (process started at
     * {@code ownerStartedAtMs}); empty owner: unknown (commands written before owners were recorded).
     */
    record TaskSubmitted(String taskId, int promptTokens, String owner, long ownerStartedAtMs, long atMs)
            implements ClusterCommand {
        public TaskSubmitted {
            Objects.requireNonNull(taskId, "taskId");
            owner = owner == null ? "" : owner;
        }

        public TaskSubmitted(String taskId, int promptTokens, long atMs) {
            this(taskId, promptTokens, "", 0, atMs);
        }
    }

    /** A task's result is committed (the log entry is the commit): the generated token ids themselves. */
    record TaskFinished(String taskId, List<Long> tokenIds, String finishReason, long atMs) implements ClusterCommand {
        public TaskFinished {
            Objects.requireNonNull(taskId, "taskId");
            tokenIds = List.copyOf(tokenIds);
        }

        public int generatedTokens() {
            return tokenIds.size();
        }
    }

    record TaskFailed(String taskId, String error, long atMs) implements ClusterCommand {
        public TaskFailed {
            Objects.requireNonNull(taskId, "taskId");
        }
    }

    /**
     * Task events recorded by replica {@code replica} (process started at {@code replicaStartedAtMs}), in the order
     * they happened there, as one log entry: tasks are recorded off the request path and many to an entry, so the
     * log's commit rate bounds no request rate. The replica owns the tasks it records started. Applying a batch
     * again (its commit timed out, yet it committed) changes nothing: each event applies once.
     */
    record TasksRecorded(String replica, long replicaStartedAtMs, List<TaskEvent> events, long atMs)
            implements ClusterCommand {
        public TasksRecorded {
            Objects.requireNonNull(replica, "replica");
            events = List.copyOf(events);
        }
    }

    /** Stops accepting work; in-flight tasks may still finish. */
    record Shutdown(String reason, long atMs) implements ClusterCommand {
    }

    /** Cleanup after shutdown is done; the system is terminated. */
    record CleanupCompleted(long atMs) implements ClusterCommand {
    }

    // Failure detection (phi accrual). Liveness is observed continuously, but the verdicts are
    // decisions, so they are log entries like any other.

    /**
     * The detector suspects a JOINED or READY node.
     *
     * @param lastHeartbeatMs arrival time of the node's last heartbeat (0 if none was ever seen)
     * @param phi             suspicion level when the decision was taken
     * @param cause           what triggered it (silence, a closed heartbeat stream)
     */
    record NodeSuspected(String nodeId, long lastHeartbeatMs, double phi, String cause, long atMs)
            implements ClusterCommand {
        public NodeSuspected {
            Objects.requireNonNull(nodeId, "nodeId");
        }
    }

    /** A SUSPECT node's heartbeats came back in time: it returns to the state it was suspected in. */
    record NodeSuspicionCleared(String nodeId, long lastHeartbeatMs, long atMs) implements ClusterCommand {
        public NodeSuspicionCleared {
            Objects.requireNonNull(nodeId, "nodeId");
        }
    }

    /** A SUSPECT node crossed the failure threshold (or did not reconnect in time): it is FAILED. */
    record NodeFailed(String nodeId, long lastHeartbeatMs, double phi, String cause, long atMs)
            implements ClusterCommand {
        public NodeFailed {
            Objects.requireNonNull(nodeId, "nodeId");
        }
    }

    /**
     * An audit found the node computing wrong (docs/verified-execution.md#audits): it is FAILED with a Byzantine
     * cause and planned away like a lost node, whatever its heartbeats say.
     *
     * @param cause what the audit compared: the step, the layers, the hashes and who computed each
     */
    record NodeByzantine(String nodeId, String cause, long atMs) implements ClusterCommand {
        public NodeByzantine {
            Objects.requireNonNull(nodeId, "nodeId");
            Objects.requireNonNull(cause, "cause");
        }
    }

    /**
     * A node the detector had declared FAILED heartbeats again.
     *
     * @param partitionIntact whether the node still holds its current-epoch partition loaded (it was only
     *                        unreachable); false after a restart
     */
    record NodeRecovered(String nodeId, boolean partitionIntact, long lastHeartbeatMs, long atMs)
            implements ClusterCommand {
        public NodeRecovered {
            Objects.requireNonNull(nodeId, "nodeId");
        }
    }

    // Membership changes (docs/state-machines.md §6.1): a drain on purpose, and leaving.

    /** An operator asked to drain {@code nodeId}: its stage is planned away, then it leaves. */
    record NodeDrainRequested(String nodeId, long atMs) implements ClusterCommand {
        public NodeDrainRequested {
            Objects.requireNonNull(nodeId, "nodeId");
        }
    }

    /** {@code nodeId}, which holds no stage, is no longer a member (drained, or gone from discovery). */
    record NodeLeft(String nodeId, String reason, long atMs) implements ClusterCommand {
        public NodeLeft {
            Objects.requireNonNull(nodeId, "nodeId");
            reason = Objects.requireNonNullElse(reason, "");
        }
    }

    // Model integrity (docs/initialization-and-bootstrap.md §4.5, §5.1).

    /** The feasibility check before an assignment; an infeasible verdict means no assignment follows. */
    record FeasibilityAssessed(Feasibility feasibility, long atMs) implements ClusterCommand {
        public FeasibilityAssessed {
            Objects.requireNonNull(feasibility, "feasibility");
        }
    }

    /** The cross-validation of the loaded weights of one epoch; only a VALID result lets the cluster be READY. */
    record WeightsValidated(WeightValidation validation, long atMs) implements ClusterCommand {
        public WeightsValidated {
            Objects.requireNonNull(validation, "validation");
        }
    }

    // Control-plane entries of docs/bootstrap-protocol.md §5.3.

    /** {@code Checkpoint}: the epoch and the Merkle root of the weights it serves, once validated. */
    record Checkpoint(long epoch, String merkleRoot, long atMs) implements ClusterCommand {
        public Checkpoint {
            Objects.requireNonNull(merkleRoot, "merkleRoot");
        }
    }

    /** {@code NoOp}: a new leader commits an entry of its own term before it acts (Raft §8). */
    record NoOp(String replicaId, long term, long atMs) implements ClusterCommand {
        public NoOp {
            Objects.requireNonNull(replicaId, "replicaId");
        }
    }

    /** A batch job defined by an operator (docs/jobs.md); refused if its id or its seed is another job's. */
    record JobDefined(JobRecord job, long atMs) implements ClusterCommand {
        public JobDefined {
            Objects.requireNonNull(job, "job");
        }
    }

    /**
     * A JOB_REQUEST's batch handed out (docs/jobs.md, leases): the one at {@code position}, or with
     * {@link JobWork#ANY_POSITION} the one the reducer chooses (an expired lease first, then the next never handed
     * out), leased to {@code holder} for {@code leaseMs}. Refused when nothing can be handed out.
     */
    record JobBatchLeased(String jobId, long step, long position, String holder, long leaseMs, long atMs)
            implements ClusterCommand {
        public JobBatchLeased {
            Objects.requireNonNull(jobId, "jobId");
            Objects.requireNonNull(holder, "holder");
            if (leaseMs < 1) {
                throw new IllegalArgumentException("leaseMs must be positive, was " + leaseMs);
            }
        }
    }

    /**
     * A client's RESULT for a batch handed out, committed once (docs/jobs.md): refused if one is committed already, if
     * the batch was never handed out, or past the job's results budget.
     */
    record JobResultRecorded(String jobId, long step, long position, byte[] data, long atMs) implements ClusterCommand {
        public JobResultRecorded {
            Objects.requireNonNull(jobId, "jobId");
            data = data.clone();
        }

        @Override
        public byte[] data() {
            return data.clone();
        }

        // by value, as the log's round trip compares it
        @Override
        public boolean equals(Object o) {
            return o instanceof JobResultRecorded r && r.jobId.equals(jobId) && r.step == step && r.position == position
                    && r.atMs == atMs && java.util.Arrays.equals(r.data, data);
        }

        @Override
        public int hashCode() {
            return Objects.hash(jobId, step, position, atMs) * 31 + java.util.Arrays.hashCode(data);
        }

        @Override
        public String toString() {
            return "JobResultRecorded[" + jobId + ", step=" + Long.toUnsignedString(step) + ", position="
                    + Long.toUnsignedString(position) + ", " + data.length + " bytes]";
        }
    }
}
