package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The replicated cluster state: an immutable value produced only by {@link ClusterReducer}. Maps keep
 * insertion order (join order, submission order) so every replica lists them identically.
 *
 * @param epoch            fencing token of the current assignment; never decreases
 * @param pipeline         node ids of the current plan in stage order
 * @param lastAppliedIndex log index of the last applied command
 * @param checks           outcome of the feasibility check and of the weights' cross-validation
 */
public record ClusterState(SystemState system, long epoch, String modelId, String merkleRoot, int expectedWorkers,
                           String statusMessage, Map<String, NodeRecord> nodes, List<String> pipeline,
                           Map<String, TaskRecord> tasks, long lastAppliedIndex, BootstrapChecks checks,
                           List<CheckpointRecord> checkpoints, ClusterConfig config) {

    /** Checkpoints kept in the state (the oldest are dropped). */
    public static final int MAX_CHECKPOINTS = 16;

    public ClusterState {
        checks = checks == null ? BootstrapChecks.NONE : checks;
        checkpoints = checkpoints == null ? List.of() : List.copyOf(checkpoints);
        nodes = Collections.unmodifiableMap(new LinkedHashMap<>(nodes));
        pipeline = List.copyOf(pipeline);
        tasks = Collections.unmodifiableMap(new LinkedHashMap<>(tasks));
    }

    public static ClusterState initial() {
        return new ClusterState(SystemState.UNINITIALIZED, 0, null, null, 0, "waiting for bootstrap",
                Map.of(), List.of(), Map.of(), 0, BootstrapChecks.NONE, List.of(), null);
    }

    ClusterState withSystem(SystemState next, String message) {
        return new ClusterState(next, epoch, modelId, merkleRoot, expectedWorkers, message, nodes, pipeline, tasks,
                lastAppliedIndex, checks, checkpoints, config);
    }

    ClusterState withModel(String model, String root, int workers) {
        return new ClusterState(system, epoch, model, root, workers, statusMessage, nodes, pipeline, tasks,
                lastAppliedIndex, checks, checkpoints, config);
    }

    ClusterState withNodes(Map<String, NodeRecord> next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, next, pipeline,
                tasks, lastAppliedIndex, checks, checkpoints, config);
    }

    ClusterState withNode(NodeRecord node) {
        Map<String, NodeRecord> next = new LinkedHashMap<>(nodes);
        next.put(node.nodeId(), node);
        return withNodes(next);
    }

    ClusterState withAssignment(long nextEpoch, List<String> nextPipeline, Map<String, NodeRecord> nextNodes) {
        return new ClusterState(system, nextEpoch, modelId, merkleRoot, expectedWorkers, statusMessage, nextNodes,
                nextPipeline, tasks, lastAppliedIndex, checks, checkpoints, config);
    }

    ClusterState withTasks(Map<String, TaskRecord> next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                next, lastAppliedIndex, checks, checkpoints, config);
    }

    ClusterState withIndex(long index) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, index, checks, checkpoints, config);
    }

    ClusterState withCheckpoints(List<CheckpointRecord> next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, checks, next, config);
    }

    ClusterState withChecks(BootstrapChecks next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, next, checkpoints, config);
    }

    ClusterState withConfig(ClusterConfig next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, checks, checkpoints, next);
    }

    /** Whether every stage of the current plan reported its partition READY and none is FAILED. */
    public boolean pipelineReady() {
        return !pipeline.isEmpty() && pipeline.stream()
                .allMatch(id -> nodes.get(id).partition() == PartitionState.READY
                        && nodes.get(id).state() != WorkerState.FAILED);
    }

    /** Number of tasks still executing. */
    public long inFlightTasks() {
        return tasks.values().stream().filter(t -> !t.state().terminal()).count();
    }

    /** The task a request with {@code idempotencyKey} started (ended or not, while the state keeps it); null if none. */
    public TaskRecord taskWithKey(String idempotencyKey) {
        return TaskRecord.holdingKey(tasks.values(), idempotencyKey);
    }
}
