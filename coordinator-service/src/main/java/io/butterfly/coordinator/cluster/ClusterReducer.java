package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.StateMachines;
import io.butterfly.coordinator.statemachine.SystemDeviations;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The pure transition function {@code apply(state, command, index) -> state}. Deterministic (no clock,
 * no randomness, no I/O) so that every Raft replica applying the same log reaches the same state.
 * A refused command throws {@link IllegalTransitionException}; since states are immutable the caller's
 * state is untouched.
 */
public final class ClusterReducer {

    /** Finished tasks kept for inspection; older ones are dropped so the state stays bounded. */
    static final int MAX_FINISHED_TASKS = TaskRetention.MAX_ENDED_TASKS;

    private static final Set<SystemState> MEMBERSHIP_OPEN = EnumSet.of(SystemState.BOOTSTRAPPING, SystemState.READY,
            SystemState.COMPUTING, SystemState.DEGRADED);
    /**
     * Not while COMPUTING (a state only a log written before {@link ClusterCommand.TasksRecorded} enters). Tasks running
     * in READY do not block a reassignment: their steps carry the epoch they started in, which the reassigned stages
     * refuse, and the replicated task list lags its replicas by a flush and may hold a dead replica's tasks.
     */
    private static final Set<SystemState> ASSIGNABLE = EnumSet.of(SystemState.BOOTSTRAPPING, SystemState.READY,
            SystemState.DEGRADED);

    private ClusterReducer() {
    }

    public static ClusterState apply(ClusterState state, ClusterCommand command, long index) {
        if (index <= state.lastAppliedIndex()) {
            throw new IllegalArgumentException("log index " + index + " is not after " + state.lastAppliedIndex());
        }
        if (state.system() == SystemState.TERMINATED) {
            throw new IllegalTransitionException("the system is TERMINATED; " + name(command) + " is refused");
        }
        if (command instanceof ClusterCommand.Checkpoint c) {
            return checkpoint(state, c, index).withIndex(index); // the checkpoint is named by its log index
        }
        return dispatch(state, command).withIndex(index);
    }

    /** Only the current epoch, serving the validated weights, can be checkpointed. */
    private static ClusterState checkpoint(ClusterState s, ClusterCommand.Checkpoint c, long index) {
        if (c.epoch() != s.epoch() || s.epoch() == 0) {
            throw new IllegalArgumentException("checkpoint of epoch " + c.epoch() + " but the cluster is at epoch "
                    + s.epoch());
        }
        if (!c.merkleRoot().equals(s.merkleRoot())) {
            throw new IllegalArgumentException("checkpoint names merkle root " + c.merkleRoot()
                    + " but the served model's is " + s.merkleRoot());
        }
        long completed = s.tasks().values().stream().filter(t -> t.state() == TaskRecord.State.COMPLETED).count();
        java.util.List<CheckpointRecord> next = new java.util.ArrayList<>(s.checkpoints());
        next.add(new CheckpointRecord("ckpt-" + index, c.epoch(), c.merkleRoot(), index, c.atMs(), completed));
        while (next.size() > ClusterState.MAX_CHECKPOINTS) {
            next.remove(0);
        }
        return s.withCheckpoints(next);
    }

    // if/instanceof rather than a pattern switch: the build targets JDK 17.
    private static ClusterState dispatch(ClusterState s, ClusterCommand c) {
        if (c instanceof ClusterCommand.Bootstrap b) {
            return bootstrap(s, b);
        } else if (c instanceof ClusterCommand.ConfigChange cc) {
            cc.config().validate();
            return s.withConfig(cc.config());
        } else if (c instanceof ClusterCommand.ModelResolved m) {
            return modelResolved(s, m);
        } else if (c instanceof ClusterCommand.NodeJoined j) {
            return nodeJoined(s, j);
        } else if (c instanceof ClusterCommand.PartitionsAssigned a) {
            return partitionsAssigned(s, a);
        } else if (c instanceof ClusterCommand.LoadProgressed p) {
            return loadProgressed(s, p);
        } else if (c instanceof ClusterCommand.LoadCompleted l) {
            return loadCompleted(s, l);
        } else if (c instanceof ClusterCommand.LoadFailed f) {
            return loadFailed(s, f);
        } else if (c instanceof ClusterCommand.TaskSubmitted t) {
            return taskSubmitted(s, t);
        } else if (c instanceof ClusterCommand.TaskFinished t) {
            return taskEnded(s, t.taskId(), task(s, t.taskId()).completed(t.tokenIds(), t.finishReason(), t.atMs()));
        } else if (c instanceof ClusterCommand.TaskFailed t) {
            return taskEnded(s, t.taskId(), task(s, t.taskId()).failed(t.error(), t.atMs()));
        } else if (c instanceof ClusterCommand.TasksRecorded t) {
            return tasksRecorded(s, t);
        } else if (c instanceof ClusterCommand.Shutdown d) {
            return move(s, SystemState.SHUTDOWN, "shutting down: " + d.reason(), c);
        } else if (c instanceof ClusterCommand.CleanupCompleted d) {
            return cleanupCompleted(s, d);
        } else if (c instanceof ClusterCommand.NodeSuspected n) {
            return nodeSuspected(s, n);
        } else if (c instanceof ClusterCommand.NodeSuspicionCleared n) {
            return suspicionCleared(s, n);
        } else if (c instanceof ClusterCommand.NodeFailed n) {
            return nodeFailed(s, n);
        } else if (c instanceof ClusterCommand.NodeByzantine n) {
            return nodeByzantine(s, n);
        } else if (c instanceof ClusterCommand.NodeRecovered n) {
            return nodeRecovered(s, n);
        } else if (c instanceof ClusterCommand.NodeDrainRequested d) {
            return drainRequested(s, d);
        } else if (c instanceof ClusterCommand.NodeLeft l) {
            return nodeLeft(s, l);
        } else if (c instanceof ClusterCommand.FeasibilityAssessed f) {
            return feasibilityAssessed(s, f);
        } else if (c instanceof ClusterCommand.WeightsValidated v) {
            return weightsValidated(s, v);
        } else if (c instanceof ClusterCommand.NoOp) {
            return s; // only the log index moves
        } else if (c instanceof ClusterCommand.JobDefined j) {
            return jobDefined(s, j.job());
        } else if (c instanceof ClusterCommand.JobBatchLeased l) {
            JobRecord job = jobNamed(s, l.jobId());
            return s.withJobWork(job.id(), s.workOf(job.id()).lease(job, l.step(), l.position(), l.holder(), l.atMs(),
                    l.leaseMs()));
        } else if (c instanceof ClusterCommand.JobResultRecorded r) {
            JobRecord job = jobNamed(s, r.jobId());
            return s.withJobWork(job.id(), s.workOf(job.id()).record(job, r.step(), r.position(), r.data(), r.atMs()));
        }
        throw new IllegalArgumentException("unknown command " + c);
    }

    private static ClusterState bootstrap(ClusterState s, ClusterCommand.Bootstrap c) {
        // Re-bootstrapping a running system is forbidden (docs/state-machines.md §1.4), even one still bootstrapping.
        if (s.system() != SystemState.UNINITIALIZED) {
            throw new IllegalTransitionException("cannot bootstrap a system that is " + s.system());
        }
        return move(s, SystemState.BOOTSTRAPPING,
                "waiting for " + c.expectedWorkers() + " workers to join", c)
                .withModel(c.modelId(), null, c.expectedWorkers());
    }

    private static ClusterState modelResolved(ClusterState s, ClusterCommand.ModelResolved c) {
        if (s.system() != SystemState.BOOTSTRAPPING) {
            if (c.merkleRoot().equals(s.merkleRoot()) && c.modelId().equals(s.modelId())) {
                return s; // a repeated report of the model already served
            }
            throw new IllegalTransitionException("cannot change the served model while " + s.system());
        }
        return maybeReady(s.withModel(c.modelId(), c.merkleRoot(), s.expectedWorkers()), c);
    }

    private static ClusterState nodeJoined(ClusterState s, ClusterCommand.NodeJoined c) {
        requireIn(s, MEMBERSHIP_OPEN, c);
        String id = c.info().nodeId();
        if (s.nodes().containsKey(id)) {
            throw new IllegalTransitionException("node '" + id + "' has already joined");
        }
        ClusterState next = s.withNode(NodeRecord.joined(c.info(), c.atMs()));
        if (next.system() == SystemState.BOOTSTRAPPING && next.pipeline().isEmpty()) {
            next = next.withSystem(SystemState.BOOTSTRAPPING,
                    "waiting for workers: " + next.nodes().size() + "/" + next.expectedWorkers() + " joined");
        }
        return next;
    }

    private static ClusterState partitionsAssigned(ClusterState s, ClusterCommand.PartitionsAssigned c) {
        requireIn(s, ASSIGNABLE, c);
        if (c.epoch() <= s.epoch()) {
            throw new IllegalTransitionException("epoch " + c.epoch() + " is not after the current epoch " + s.epoch());
        }
        if (c.stages().isEmpty()) {
            throw new IllegalTransitionException("an assignment needs at least one stage");
        }
        Map<String, StageAssignment> byNode = new LinkedHashMap<>();
        List<String> pipeline = new ArrayList<>();
        for (StageAssignment stage : c.stages()) {
            pipeline.add(stage.nodeId());
            for (String holder : stage.holders()) {
                if (!s.nodes().containsKey(holder)) {
                    throw new IllegalTransitionException("stage assigned to unknown node '" + holder + "'");
                }
                if (s.draining().contains(holder)) {
                    throw new IllegalTransitionException("stage assigned to node '" + holder + "', which is draining");
                }
                if (byNode.put(holder, stage) != null) {
                    throw new IllegalTransitionException("node '" + holder + "' appears in two stages");
                }
            }
        }
        Set<String> kept = keptPipelinesHolders(s, c);
        Map<String, NodeRecord> nodes = new LinkedHashMap<>();
        for (NodeRecord n : s.nodes().values()) {
            if (kept.contains(n.nodeId())) {
                nodes.put(n.nodeId(), n); // its partition serves on in the new epoch: still READY
                continue;
            }
            StageAssignment stage = byNode.get(n.nodeId());
            // An expert group's worker holds the stage's layer range (its experts of them), no embedding or head.
            boolean own = stage != null && stage.nodeId().equals(n.nodeId());
            NodeRecord updated = stage != null
                    ? n.assign(stage.layerStart(), stage.layerEnd(), own && stage.hasEmbedding(),
                            own && stage.hasHead(), c.atMs())
                    : n.assigned() ? n.unassign(c.atMs()) : n;
            nodes.put(n.nodeId(), updated);
        }
        List<EpochPlan> plans = new ArrayList<>(s.plans());
        plans.add(new EpochPlan(c.epoch(), c.stages(), c.reason(), c.atMs()));
        while (plans.size() > ClusterState.MAX_PLANS) {
            plans.remove(0);
        }
        ClusterState next = s.withAssignment(c.epoch(), List.copyOf(pipeline), nodes).withPlans(plans);
        String message = "loading partitions on " + byNode.size() + " workers (epoch " + c.epoch() + ")"
                + (c.reason().isEmpty() ? "" : ": " + c.reason());
        if (s.system() == SystemState.READY) {
            // A reassignment while serving means partitions are not loaded yet: reduced capacity, not READY.
            next = next.withRecovery(Recovery.began(c.atMs(), s.epoch(),
                    c.reason().isEmpty() ? "reassigned while serving" : c.reason(), null));
        }
        return move(next, s.system() == SystemState.READY ? SystemState.DEGRADED : s.system(), message, c);
    }

    /**
     * The workers of pipelines that the assignment keeps as they were in the current epoch, every one of them READY
     * (docs/scale-out.md): with several pipelines, a re-plan of one (or one added) leaves the others serving, their
     * partitions READY, their steps still carrying the epoch they have been the same since
     * ({@link ClusterState#stepsEpoch}). Into one pipeline, none: every epoch change reloads or holds on as before.
     */
    private static Set<String> keptPipelinesHolders(ClusterState s, ClusterCommand.PartitionsAssigned c) {
        List<List<StageAssignment>> next = EpochPlan.split(c.stages());
        List<List<StageAssignment>> now = s.plan(s.epoch()).isPresent() ? s.pipelines() : List.of();
        if (next.size() <= 1 || c.epoch() != s.epoch() + 1) {
            return Set.of();
        }
        Set<String> kept = new HashSet<>();
        for (List<StageAssignment> p : next) {
            List<String> holders = p.stream().flatMap(stage -> stage.holders().stream()).toList();
            if (now.contains(p) && holders.stream().allMatch(id -> {
                NodeRecord n = s.nodes().get(id);
                return n != null && !n.lost() && n.state() != WorkerState.FAILED && n.partition() == PartitionState.READY;
            })) {
                kept.addAll(holders);
            }
        }
        return kept;
    }

    private static ClusterState loadProgressed(ClusterState s, ClusterCommand.LoadProgressed c) {
        NodeRecord n = assignedNode(s, c.nodeId(), c.epoch(), c);
        if (!c.phase().isLoadPhase()) {
            throw new IllegalTransitionException(c.phase() + " is not a load phase");
        }
        advance(n, c.phase());
        double progress = Double.isNaN(c.progress()) ? 0.0 : Math.max(0.0, Math.min(1.0, c.progress()));
        return s.withNode(n.progressed(c.phase(), progress, c.currentFile(), c.atMs()));
    }

    private static ClusterState loadCompleted(ClusterState s, ClusterCommand.LoadCompleted c) {
        NodeRecord n = assignedNode(s, c.nodeId(), c.epoch(), c);
        boolean loadedAgain = n.partition() != PartitionState.READY; // not a repeated report of the same load
        advance(n, PartitionState.READY);
        ClusterState next = s.withNode(n.loaded(c.partitionChecksum(), c.kvCacheBudgetBytes(), c.atMs()));
        WeightValidation v = s.checks().validation();
        if (loadedAgain && v != null && v.epoch() == s.epoch()) {
            // The epoch's validation covered the partitions as they were then; this one was loaded since (a
            // restarted worker's stage reloaded while DEGRADED): READY again only once it is validated too.
            next = next.withChecks(next.checks().withoutValidation());
        }
        return maybeReady(next, c);
    }

    private static ClusterState loadFailed(ClusterState s, ClusterCommand.LoadFailed c) {
        NodeRecord n = assignedNode(s, c.nodeId(), c.epoch(), c);
        ClusterState next = s.withNode(n.failed(c.errorCode(), c.errorMessage(), c.atMs()));
        String message = "node '" + c.nodeId() + "' failed to load its partition: " + c.errorCode()
                + (c.errorMessage() == null || c.errorMessage().isEmpty() ? "" : " (" + c.errorMessage() + ")");
        boolean serving = s.system() == SystemState.READY || s.system() == SystemState.COMPUTING;
        return move(recovering(next, c.nodeId(), message, c.atMs()), serving ? SystemState.DEGRADED : s.system(),
                message, c);
    }

    /** A command of a log written before tasks were recorded in batches: it applies as it always did. */
    private static ClusterState taskSubmitted(ClusterState s, ClusterCommand.TaskSubmitted c) {
        if (!s.system().acceptsWork()) {
            throw new NotReadyException("the cluster is " + s.system() + ", not READY: " + s.statusMessage());
        }
        if (s.tasks().containsKey(c.taskId())) {
            throw new IllegalTransitionException("task '" + c.taskId() + "' already exists");
        }
        Map<String, TaskRecord> tasks = new LinkedHashMap<>(s.tasks());
        tasks.put(c.taskId(), TaskRecord.executing(c.taskId(), c.promptTokens(), null, c.owner(), c.ownerStartedAtMs(),
                c.atMs()));
        // Several tasks may run at once (workers batch sequences), so COMPUTING also accepts work.
        return move(s.withTasks(tasks), SystemState.COMPUTING, servingMessage(s), c);
    }

    /** A task's outcome, logged alone (a log written before tasks were recorded in batches). */
    private static ClusterState taskEnded(ClusterState s, String taskId, TaskRecord ended) {
        Map<String, TaskRecord> tasks = new LinkedHashMap<>(s.tasks());
        tasks.put(taskId, ended);
        prune(tasks);
        return leaveComputingWhenIdle(s.withTasks(tasks), "task " + taskId);
    }

    /**
     * Applies each event once, in order: a task is recorded started once, and its first recorded outcome stands. A
     * repeated event (a batch applied again after its commit timed out) or an outcome of a task the state does not
     * hold (its start was never recorded, or it ended long ago and was pruned) changes nothing; a batch is never
     * refused for one of its events, so one event cannot cost the others their record. Progress, pauses and outcomes
     * apply only from the task's owner (a failure, from whoever failed it as that owner), and a task moves to another
     * replica only from the owner the move names: a replica that lost a task cannot move it any more. A start whose
     * idempotency key another task holds is not recorded (that task is the request's). The system state does not
     * change: tasks run while the system is READY.
     */
    private static ClusterState tasksRecorded(ClusterState s, ClusterCommand.TasksRecorded c) {
        Map<String, TaskRecord> tasks = new LinkedHashMap<>(s.tasks());
        for (TaskEvent e : c.events()) {
            TaskRecord t = tasks.get(e.taskId());
            if (e instanceof TaskEvent.Started started) {
                if (t == null && TaskRecord.holdingKey(tasks.values(), started.request()) == null) {
                    tasks.put(e.taskId(), TaskRecord.executing(e.taskId(), started.promptTokens(), started.request(),
                            c.replica(), c.replicaStartedAtMs(), e.atMs()));
                }
            } else if (t == null || t.state().terminal()) {
                continue;
            } else if (e instanceof TaskEvent.Failed f) {
                if (f.owner() == null || t.isOwner(f.owner(), f.ownerStartedAtMs())) {
                    tasks.put(e.taskId(), t.failed(f.error(), e.atMs()));
                }
            } else if (e instanceof TaskEvent.Adopted a) {
                if (t.isOwner(a.fromOwner(), a.fromOwnerStartedAtMs())) {
                    tasks.put(e.taskId(), t.adoptedBy(c.replica(), c.replicaStartedAtMs(), e.atMs()));
                }
            } else if (t.isOwner(c.replica(), c.replicaStartedAtMs()) || t.owner().isEmpty()) {
                tasks.put(e.taskId(), ownersEvent(t, e)); // (no owner: submitted before owners were recorded)
            }
        }
        prune(tasks);
        return leaveComputingWhenIdle(s.withTasks(tasks), c.events().size() + " task events");
    }

    private static TaskRecord ownersEvent(TaskRecord t, TaskEvent e) {
        if (e instanceof TaskEvent.Finished f) {
            return t.completed(f.tokenIds(), f.finishReason(), e.atMs());
        } else if (e instanceof TaskEvent.Progressed p) {
            return t.progressed(p);
        } else if (e instanceof TaskEvent.Paused p) {
            return t.paused(p.reason(), e.atMs());
        } else if (e instanceof TaskEvent.Resumed) {
            return t.resumed(e.atMs());
        }
        return t;
    }

    /**
     * COMPUTING is entered only by a task submitted alone (a log written before tasks were recorded in batches):
     * when its last in-flight task ends, the system passes through COMMITTING back to READY within that one
     * command, the log entry itself being the commit (docs/state-machines.md §1.4 forbids skipping COMMITTING).
     */
    private static ClusterState leaveComputingWhenIdle(ClusterState next, String what) {
        if (next.system() != SystemState.COMPUTING || next.inFlightTasks() > 0) {
            return next;
        }
        ClusterState committing = move(next, SystemState.COMMITTING, "committing " + what, null);
        return move(committing, SystemState.READY, servingMessage(next), null);
    }

    private static ClusterState cleanupCompleted(ClusterState s, ClusterCommand.CleanupCompleted c) {
        Map<String, TaskRecord> tasks = new LinkedHashMap<>(s.tasks());
        tasks.replaceAll((id, t) -> t.state().terminal() ? t : t.failed("cancelled by shutdown", c.atMs()));
        return move(s, SystemState.TERMINATED, "terminated", c).withTasks(tasks);
    }

    // --- failure detection -------------------------------------------------------------------------

    private static ClusterState nodeSuspected(ClusterState s, ClusterCommand.NodeSuspected c) {
        requireIn(s, MEMBERSHIP_OPEN, c);
        NodeRecord n = node(s, c.nodeId());
        if (n.state() != WorkerState.JOINED && n.state() != WorkerState.READY) {
            throw new IllegalTransitionException("node '" + c.nodeId() + "' cannot become SUSPECT from " + n.state());
        }
        return s.withNode(n.suspected(c.lastHeartbeatMs(), c.phi(), c.cause(), c.atMs()));
    }

    private static ClusterState suspicionCleared(ClusterState s, ClusterCommand.NodeSuspicionCleared c) {
        requireIn(s, MEMBERSHIP_OPEN, c);
        NodeRecord n = node(s, c.nodeId());
        if (n.state() != WorkerState.SUSPECT) {
            throw new IllegalTransitionException("node '" + c.nodeId() + "' is " + n.state() + ", not SUSPECT");
        }
        return s.withNode(n.suspicionCleared(c.lastHeartbeatMs(), c.atMs()));
    }

    /** A failed pipeline stage leaves the model unservable: READY/COMPUTING become DEGRADED. */
    private static ClusterState nodeFailed(ClusterState s, ClusterCommand.NodeFailed c) {
        requireIn(s, MEMBERSHIP_OPEN, c);
        NodeRecord n = node(s, c.nodeId());
        if (n.state() != WorkerState.SUSPECT) {
            throw new IllegalTransitionException("node '" + c.nodeId() + "' must be SUSPECT before FAILED, is "
                    + n.state());
        }
        ClusterState next = s.withNode(n.detectedFailed(c.lastHeartbeatMs(), c.phi(), c.cause(), c.atMs()));
        boolean serving = s.system() == SystemState.READY || s.system() == SystemState.COMPUTING;
        if (!s.planned().contains(c.nodeId()) || !(serving || s.system() == SystemState.DEGRADED)) {
            return next;
        }
        String message = "node '" + c.nodeId() + "' FAILED (" + c.cause() + "); its stage is unavailable";
        return move(recovering(next, c.nodeId(), message, c.atMs()), SystemState.DEGRADED, message, c);
    }

    /**
     * An audit's verdict: the node computed wrong. FAILED from whatever state it was in but FAILED (a node that is
     * gone already computes nothing more), and, when it holds a stage of a serving system, DEGRADED and planned away
     * exactly as a crashed node's stage.
     */
    private static ClusterState nodeByzantine(ClusterState s, ClusterCommand.NodeByzantine c) {
        requireIn(s, MEMBERSHIP_OPEN, c);
        NodeRecord n = node(s, c.nodeId());
        if (n.state() == WorkerState.FAILED) {
            throw new IllegalTransitionException("node '" + c.nodeId() + "' is FAILED already");
        }
        String cause = "Byzantine: " + c.cause();
        ClusterState next = s.withNode(n.byzantine(cause, c.atMs()));
        boolean serving = s.system() == SystemState.READY || s.system() == SystemState.COMPUTING;
        if (!s.pipeline().contains(c.nodeId()) || !(serving || s.system() == SystemState.DEGRADED)) {
            return next;
        }
        String message = "node '" + c.nodeId() + "' FAILED (" + cause + "); its stage is planned away";
        return move(recovering(next, c.nodeId(), message, c.atMs()), SystemState.DEGRADED, message, c);
    }

    /**
     * A stage lost while serving (or while recovering already): the recovery the state shows begins, or counts one more
     * lost node. A system still bootstrapping has nothing to recover.
     */
    private static ClusterState recovering(ClusterState s, String nodeId, String cause, long atMs) {
        if (s.system() == SystemState.BOOTSTRAPPING || s.system() == SystemState.UNINITIALIZED) {
            return s;
        }
        Recovery r = s.recovery();
        return s.withRecovery(r != null && r.ongoing() ? r.alsoLost(nodeId) : Recovery.began(atMs, s.epoch(), cause, nodeId));
    }

    /**
     * An operator's drain: the node is marked draining, the leader plans its stage away (a spare or the survivors take
     * it), and once that plan is READY the node leaves. Refused when no other worker could serve.
     */
    private static ClusterState drainRequested(ClusterState s, ClusterCommand.NodeDrainRequested c) {
        requireIn(s, MEMBERSHIP_OPEN, c);
        node(s, c.nodeId());
        if (s.draining().contains(c.nodeId())) {
            throw new IllegalTransitionException("node '" + c.nodeId() + "' is draining already");
        }
        boolean othersServe = s.nodes().values().stream().anyMatch(n -> !n.nodeId().equals(c.nodeId())
                && !s.draining().contains(n.nodeId()) && n.state() != WorkerState.FAILED);
        if (!othersServe) {
            throw new IllegalTransitionException("draining node '" + c.nodeId() + "' would leave no worker to serve");
        }
        List<String> draining = new ArrayList<>(s.draining());
        draining.add(c.nodeId());
        return s.withDraining(draining);
    }

    /** A member that holds no stage leaves: drained, or gone from discovery while it held none. */
    private static ClusterState nodeLeft(ClusterState s, ClusterCommand.NodeLeft c) {
        requireIn(s, MEMBERSHIP_OPEN, c);
        node(s, c.nodeId());
        if (s.planned().contains(c.nodeId())) {
            throw new IllegalTransitionException("node '" + c.nodeId() + "' holds a stage of epoch " + s.epoch()
                    + " and cannot leave before it is planned away");
        }
        Map<String, NodeRecord> nodes = new LinkedHashMap<>(s.nodes());
        nodes.remove(c.nodeId());
        List<String> draining = new ArrayList<>(s.draining());
        draining.remove(c.nodeId());
        return s.withNodes(nodes).withDraining(draining);
    }

    private static ClusterState nodeRecovered(ClusterState s, ClusterCommand.NodeRecovered c) {
        requireIn(s, MEMBERSHIP_OPEN, c);
        NodeRecord n = node(s, c.nodeId());
        if (n.state() != WorkerState.FAILED || !n.health().failedByDetector()) {
            throw new IllegalTransitionException("node '" + c.nodeId() + "' was not declared FAILED by the detector");
        }
        NodeRecord back = n.recovered(c.partitionIntact(), c.lastHeartbeatMs(), c.atMs());
        ClusterState next = s.withNode(back);
        if (back.partition() != PartitionState.READY && s.planned().contains(c.nodeId())) {
            // The reloaded stage's bytes are new: they are cross-validated again before READY.
            next = next.withChecks(next.checks().withoutValidation());
        }
        if (next.system() == SystemState.DEGRADED && back.partition() != PartitionState.READY
                && s.planned().contains(c.nodeId())) {
            return next.withSystem(SystemState.DEGRADED, "node '" + c.nodeId()
                    + "' is back but lost its partition; its stage must be reloaded (epoch " + s.epoch() + ")");
        }
        return maybeReady(next, c);
    }

    // --- model integrity ----------------------------------------------------------------------------

    /** Recorded whatever the verdict; an infeasible one is the status message (no assignment follows). */
    private static ClusterState feasibilityAssessed(ClusterState s, ClusterCommand.FeasibilityAssessed c) {
        requireIn(s, ASSIGNABLE, c);
        ClusterState next = s.withChecks(s.checks().with(c.feasibility()));
        String planner = c.feasibility().planner() == null ? "" : " (" + c.feasibility().planner() + " planner)";
        return next.withSystem(s.system(), (c.feasibility().feasible() ? "planning" + planner + ": " : "")
                + c.feasibility().reason());
    }

    private static ClusterState weightsValidated(ClusterState s, ClusterCommand.WeightsValidated c) {
        requireIn(s, MEMBERSHIP_OPEN, c);
        WeightValidation v = c.validation();
        if (v.epoch() != s.epoch()) {
            throw new IllegalTransitionException("validation of epoch " + v.epoch() + " is stale, current epoch "
                    + s.epoch());
        }
        ClusterState next = s.withChecks(s.checks().with(v));
        return v.status() == WeightValidation.Status.VALID ? maybeReady(next, c)
                : next.withSystem(s.system(), validationMessage(v));
    }

    private static String validationMessage(WeightValidation v) {
        return "weights failed cross-validation (" + v.status() + ", epoch " + v.epoch() + "): "
                + (v.problems().isEmpty() ? "nodes " + v.failedNodes() : String.join("; ", v.problems()));
    }

    private static NodeRecord node(ClusterState s, String nodeId) {
        NodeRecord n = s.nodes().get(nodeId);
        if (n == null) {
            throw new IllegalTransitionException("no node '" + nodeId + "'");
        }
        return n;
    }

    /**
     * READY once the model is pinned, every stage is loaded and its weights are validated. Tasks still open do not hold
     * it back: READY serves while tasks run, and a task whose stage was lost fails on its own (its stage refuses a step
     * of a sequence it holds no cache for).
     */
    private static ClusterState maybeReady(ClusterState s, ClusterCommand c) {
        boolean waiting = s.system() == SystemState.BOOTSTRAPPING || s.system() == SystemState.DEGRADED;
        if (!waiting || s.pipeline().isEmpty()) {
            return s;
        }
        boolean validated = s.checks().weightsValidFor(s.epoch());
        if (s.merkleRoot() != null && s.pipelineReady() && validated) {
            Recovery r = s.recovery();
            ClusterState ready = r != null && r.ongoing() ? s.withRecovery(r.ended(c.atMs(), s.epoch())) : s;
            return move(ready, SystemState.READY, servingMessage(s), c);
        }
        if (s.merkleRoot() != null && s.pipelineReady() && !validated) {
            // READY only once the loaded weights are cross-validated against the manifest (docs/initialization-and-bootstrap.md §6.2 check 4).
            WeightValidation v = s.checks().validation();
            return s.withSystem(s.system(), v != null && v.epoch() == s.epoch() ? validationMessage(v)
                    : "all " + s.pipeline().size() + " stages loaded; cross-validating the weights (epoch "
                    + s.epoch() + ")");
        }
        long ready = s.planned().stream().filter(id -> s.nodes().get(id).partition() == PartitionState.READY).count();
        String message = s.merkleRoot() == null ? "waiting for the model manifest"
                : "loading partitions: " + ready + "/" + s.planned().size() + " stages ready (epoch " + s.epoch() + ")";
        return s.withSystem(s.system(), message);
    }

    private static NodeRecord assignedNode(ClusterState s, String nodeId, long epoch, ClusterCommand c) {
        requireIn(s, MEMBERSHIP_OPEN, c);
        if (epoch != s.epoch()) {
            throw new IllegalTransitionException("stale report from '" + nodeId + "': epoch " + epoch
                    + ", current epoch " + s.epoch());
        }
        NodeRecord n = s.nodes().get(nodeId);
        if (n == null || !s.planned().contains(nodeId)) {
            throw new IllegalTransitionException("node '" + nodeId + "' has no partition in epoch " + epoch);
        }
        if (n.lost()) {
            // Its reports count again once its heartbeats have brought it back (NodeRecovered); never for a node an
            // audit evicted as Byzantine.
            throw new IllegalTransitionException("node '" + nodeId + "' is FAILED; reports are refused until it recovers");
        }
        return n;
    }

    private static void advance(NodeRecord n, PartitionState next) {
        if (!n.partition().canAdvanceTo(next)) {
            throw new IllegalTransitionException("partition of '" + n.nodeId() + "' cannot go from "
                    + n.partition() + " to " + next);
        }
    }

    private static TaskRecord task(ClusterState s, String taskId) {
        TaskRecord t = s.tasks().get(taskId);
        if (t == null) {
            throw new IllegalTransitionException("no task '" + taskId + "'");
        }
        if (t.state().terminal()) {
            throw new IllegalTransitionException("task '" + taskId + "' already ended " + t.state());
        }
        return t;
    }

    /** Drops the oldest ended tasks beyond what the state keeps ({@link TaskRetention}); running tasks stay. */
    private static void prune(Map<String, TaskRecord> tasks) {
        TaskRetention.prune(tasks);
    }

    private static void requireIn(ClusterState s, Set<SystemState> allowed, ClusterCommand c) {
        if (!allowed.contains(s.system())) {
            throw new IllegalTransitionException(name(c) + " is not allowed while the system is " + s.system());
        }
    }

    private static ClusterState move(ClusterState s, SystemState next, String message, ClusterCommand c) {
        checkSystemTransition(s.system(), next, c);
        return s.withSystem(next, message);
    }

    /**
     * The one guard for system-state changes: the spec's table (statemachine.StateMachines.SYSTEM) or a documented
     * deviation (statemachine.SystemDeviations); staying put is not a transition. Refused -> state unchanged.
     */
    private static void checkSystemTransition(SystemState from, SystemState to, ClusterCommand c) {
        if ((from == to && from != SystemState.TERMINATED) || SystemDeviations.reason(from, to) != null) {
            return;
        }
        try {
            StateMachines.SYSTEM.check(from, to);
        } catch (IllegalTransitionException e) {
            throw c == null ? e : e.on(name(c));
        }
    }

    private static String servingMessage(ClusterState s) {
        return "serving model " + s.modelId() + " on " + s.pipeline().size() + " stages (epoch " + s.epoch() + ")";
    }

    private static String name(ClusterCommand c) {
        return c.getClass().getSimpleName();
    }

    /** Jobs are named by their id over REST and by their seed on the JOBS wire: both unique. */
    private static ClusterState jobDefined(ClusterState s, JobRecord job) {
        if (s.jobs().containsKey(job.id())) {
            throw new IllegalArgumentException("job " + job.id() + " exists already");
        }
        for (JobRecord other : s.jobs().values()) {
            if (other.seed() == job.seed()) {
                throw new IllegalArgumentException("seed " + Long.toUnsignedString(job.seed()) + " is job "
                        + other.id() + "'s already (a JOB_REQUEST names its job by its seed)");
            }
        }
        java.util.Map<String, JobRecord> next = new java.util.LinkedHashMap<>(s.jobs());
        next.put(job.id(), job);
        return s.withJobs(next);
    }

    private static JobRecord jobNamed(ClusterState s, String jobId) {
        JobRecord job = s.jobs().get(jobId);
        if (job == null) {
            throw new IllegalArgumentException("no job " + jobId);
        }
        return job;
    }
}
