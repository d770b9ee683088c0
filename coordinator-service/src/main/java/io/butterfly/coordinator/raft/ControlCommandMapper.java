package io.butterfly.coordinator.raft;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterConfig;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.planning.ExpertGroup;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.proto.coordinator.v1.BootstrapCommand;
import io.butterfly.proto.coordinator.v1.CleanupCompletedCommand;
import io.butterfly.proto.coordinator.v1.ConfigChangeCommand;
import io.butterfly.proto.coordinator.v1.ControlCommand;
import io.butterfly.proto.coordinator.v1.ControlNodeInfo;
import io.butterfly.proto.coordinator.v1.ControlExpertGroup;
import io.butterfly.proto.coordinator.v1.ControlStage;
import io.butterfly.proto.coordinator.v1.LoadCompletedCommand;
import io.butterfly.proto.coordinator.v1.LoadFailedCommand;
import io.butterfly.proto.coordinator.v1.LoadProgressedCommand;
import io.butterfly.proto.coordinator.v1.ModelResolvedCommand;
import io.butterfly.proto.coordinator.v1.NodeByzantineCommand;
import io.butterfly.proto.coordinator.v1.NodeDrainRequestedCommand;
import io.butterfly.proto.coordinator.v1.NodeFailedCommand;
import io.butterfly.proto.coordinator.v1.NodeJoinedCommand;
import io.butterfly.proto.coordinator.v1.NodeLeftCommand;
import io.butterfly.proto.coordinator.v1.NodeRecoveredCommand;
import io.butterfly.proto.coordinator.v1.NodeSuspectedCommand;
import io.butterfly.proto.coordinator.v1.NodeSuspicionClearedCommand;
import io.butterfly.proto.coordinator.v1.PartitionsAssignedCommand;
import io.butterfly.proto.coordinator.v1.ShutdownCommand;
import io.butterfly.proto.coordinator.v1.TaskFailedCommand;
import io.butterfly.proto.coordinator.v1.TaskFinishedCommand;
import io.butterfly.proto.coordinator.v1.TaskSubmittedCommand;
import io.butterfly.proto.coordinator.v1.TasksRecordedCommand;
import java.util.function.Consumer;

/**
 * The single place where a {@link ClusterCommand} becomes a replicated log entry and back. Adding a
 * command means adding one case in each direction; {@code ControlCommandMapperTest} fails for any
 * permitted subclass of the sealed interface that does not round-trip (Java 17 has no exhaustive
 * pattern switch, so the test is the exhaustiveness check).
 */
public final class ControlCommandMapper {

    private ControlCommandMapper() {
    }

    public static byte[] serialize(ClusterCommand command) {
        return toProto(command).toByteArray();
    }

    public static ClusterCommand deserialize(byte[] bytes) {
        try {
            return fromProto(ControlCommand.parseFrom(bytes));
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            throw new IllegalArgumentException("corrupt control-log entry", e);
        }
    }

    public static ControlCommand toProto(ClusterCommand command) {
        ControlCommand.Builder b = ControlCommand.newBuilder().setAtMs(command.atMs());
        if (command instanceof ClusterCommand.ConfigChange c) {
            ClusterConfig k = c.config();
            b.setConfigChange(ConfigChangeCommand.newBuilder().setClusterName(k.clusterName())
                    .setQuorumSize(k.quorumSize()).setMaxByzantine(k.maxByzantine())
                    .setCurrentMemberCount(k.memberCount()).setProtocolVersion(k.protocolVersion()));
        } else if (command instanceof ClusterCommand.Bootstrap c) {
            b.setBootstrap(BootstrapCommand.newBuilder().setModelId(c.modelId()).setExpectedWorkers(c.expectedWorkers()));
        } else if (command instanceof ClusterCommand.ModelResolved c) {
            b.setModelResolved(ModelResolvedCommand.newBuilder().setModelId(c.modelId()).setMerkleRoot(c.merkleRoot()));
        } else if (command instanceof ClusterCommand.NodeJoined c) {
            b.setNodeJoined(NodeJoinedCommand.newBuilder().setInfo(toProto(c.info())));
        } else if (command instanceof ClusterCommand.PartitionsAssigned c) {
            PartitionsAssignedCommand.Builder p = PartitionsAssignedCommand.newBuilder().setEpoch(c.epoch());
            for (StageAssignment s : c.stages()) {
                p.addStages(ControlStage.newBuilder().setNodeId(s.nodeId()).setLayerStart(s.layerStart())
                        .setLayerEnd(s.layerEnd()).setHasEmbedding(s.hasEmbedding()).setHasHead(s.hasHead())
                        .addAllExpertGroups(s.expertGroups().stream().map(g -> ControlExpertGroup.newBuilder()
                                .setNodeId(g.nodeId()).setFirstExpert(g.firstExpert()).setEndExpert(g.endExpert())
                                .build()).toList()));
            }
            if (!c.reason().isEmpty()) {
                p.setReason(c.reason());
            }
            b.setPartitionsAssigned(p);
        } else if (command instanceof ClusterCommand.LoadProgressed c) {
            LoadProgressedCommand.Builder p = LoadProgressedCommand.newBuilder().setNodeId(c.nodeId())
                    .setEpoch(c.epoch()).setPhase(c.phase().name()).setProgress(c.progress());
            ifPresent(c.currentFile(), p::setCurrentFile);
            b.setLoadProgressed(p);
        } else if (command instanceof ClusterCommand.LoadCompleted c) {
            LoadCompletedCommand.Builder p = LoadCompletedCommand.newBuilder().setNodeId(c.nodeId()).setEpoch(c.epoch())
                    .setKvCacheBudgetBytes(c.kvCacheBudgetBytes());
            ifPresent(c.partitionChecksum(), p::setPartitionChecksum);
            b.setLoadCompleted(p);
        } else if (command instanceof ClusterCommand.LoadFailed c) {
            LoadFailedCommand.Builder p = LoadFailedCommand.newBuilder().setNodeId(c.nodeId()).setEpoch(c.epoch());
            ifPresent(c.errorCode(), p::setErrorCode);
            ifPresent(c.errorMessage(), p::setErrorMessage);
            b.setLoadFailed(p);
        } else if (command instanceof ClusterCommand.TaskSubmitted c) {
            b.setTaskSubmitted(TaskSubmittedCommand.newBuilder().setTaskId(c.taskId()).setPromptTokens(c.promptTokens())
                    .setOwner(c.owner()).setOwnerStartedAtMs(c.ownerStartedAtMs()));
        } else if (command instanceof ClusterCommand.TaskFinished c) {
            TaskFinishedCommand.Builder p = TaskFinishedCommand.newBuilder().setTaskId(c.taskId())
                    .setGeneratedTokens(c.generatedTokens()).addAllTokenIds(c.tokenIds());
            ifPresent(c.finishReason(), p::setFinishReason);
            b.setTaskFinished(p);
        } else if (command instanceof ClusterCommand.TaskFailed c) {
            TaskFailedCommand.Builder p = TaskFailedCommand.newBuilder().setTaskId(c.taskId());
            ifPresent(c.error(), p::setError);
            b.setTaskFailed(p);
        } else if (command instanceof ClusterCommand.TasksRecorded c) {
            TasksRecordedCommand.Builder p = TasksRecordedCommand.newBuilder().setReplica(c.replica())
                    .setReplicaStartedAtMs(c.replicaStartedAtMs());
            c.events().forEach(e -> p.addEvents(TaskEventMapper.toProto(e)));
            b.setTasksRecorded(p);
        } else if (command instanceof ClusterCommand.Shutdown c) {
            ShutdownCommand.Builder p = ShutdownCommand.newBuilder();
            ifPresent(c.reason(), p::setReason);
            b.setShutdown(p);
        } else if (command instanceof ClusterCommand.CleanupCompleted) {
            b.setCleanupCompleted(CleanupCompletedCommand.getDefaultInstance());
        } else if (command instanceof ClusterCommand.NodeSuspected c) {
            NodeSuspectedCommand.Builder p = NodeSuspectedCommand.newBuilder().setNodeId(c.nodeId())
                    .setLastHeartbeatMs(c.lastHeartbeatMs()).setPhi(c.phi());
            ifPresent(c.cause(), p::setCause);
            b.setNodeSuspected(p);
        } else if (command instanceof ClusterCommand.NodeSuspicionCleared c) {
            b.setNodeSuspicionCleared(NodeSuspicionClearedCommand.newBuilder().setNodeId(c.nodeId())
                    .setLastHeartbeatMs(c.lastHeartbeatMs()));
        } else if (command instanceof ClusterCommand.NodeFailed c) {
            NodeFailedCommand.Builder p = NodeFailedCommand.newBuilder().setNodeId(c.nodeId())
                    .setLastHeartbeatMs(c.lastHeartbeatMs()).setPhi(c.phi());
            ifPresent(c.cause(), p::setCause);
            b.setNodeFailed(p);
        } else if (command instanceof ClusterCommand.NodeByzantine c) {
            b.setNodeByzantine(NodeByzantineCommand.newBuilder().setNodeId(c.nodeId()).setCause(c.cause()));
        } else if (command instanceof ClusterCommand.NodeRecovered c) {
            b.setNodeRecovered(NodeRecoveredCommand.newBuilder().setNodeId(c.nodeId())
                    .setPartitionIntact(c.partitionIntact()).setLastHeartbeatMs(c.lastHeartbeatMs()));
        } else if (command instanceof ClusterCommand.NodeDrainRequested c) {
            b.setNodeDrainRequested(NodeDrainRequestedCommand.newBuilder().setNodeId(c.nodeId()));
        } else if (command instanceof ClusterCommand.NodeLeft c) {
            NodeLeftCommand.Builder p = NodeLeftCommand.newBuilder().setNodeId(c.nodeId());
            if (!c.reason().isEmpty()) {
                p.setReason(c.reason());
            }
            b.setNodeLeft(p);
        } else if (command instanceof ClusterCommand.Checkpoint c) {
            b.setCheckpoint(io.butterfly.proto.coordinator.v1.CheckpointCommand.newBuilder().setEpoch(c.epoch())
                    .setMerkleRoot(c.merkleRoot()));
        } else if (command instanceof ClusterCommand.NoOp c) {
            b.setNoOp(io.butterfly.proto.coordinator.v1.NoOpCommand.newBuilder().setReplicaId(c.replicaId())
                    .setTerm(c.term()));
        } else if (!IntegrityCommandMapper.toProto(command, b) && !JobCommandMapper.toProto(command, b)) {
            throw new IllegalArgumentException("no log mapping for " + command.getClass().getName());
        }
        return b.build();
    }

    public static ClusterCommand fromProto(ControlCommand proto) {
        long at = proto.getAtMs();
        ClusterCommand integrity = IntegrityCommandMapper.fromProto(proto);
        if (integrity != null) {
            return integrity;
        }
        ClusterCommand job = JobCommandMapper.fromProto(proto);
        if (job != null) {
            return job;
        }
        switch (proto.getCommandCase()) {
            case CONFIG_CHANGE: {
                ConfigChangeCommand c = proto.getConfigChange();
                return new ClusterCommand.ConfigChange(new ClusterConfig(c.getClusterName(), c.getQuorumSize(),
                        c.getMaxByzantine(), c.getCurrentMemberCount(), c.getProtocolVersion()), at);
            }
            case BOOTSTRAP: {
                BootstrapCommand c = proto.getBootstrap();
                return new ClusterCommand.Bootstrap(c.getModelId(), c.getExpectedWorkers(), at);
            }
            case MODEL_RESOLVED: {
                ModelResolvedCommand c = proto.getModelResolved();
                return new ClusterCommand.ModelResolved(c.getModelId(), c.getMerkleRoot(), at);
            }
            case NODE_JOINED:
                return new ClusterCommand.NodeJoined(fromProto(proto.getNodeJoined().getInfo()), at);
            case PARTITIONS_ASSIGNED: {
                PartitionsAssignedCommand c = proto.getPartitionsAssigned();
                return new ClusterCommand.PartitionsAssigned(c.getEpoch(), c.getStagesList().stream()
                        .map(s -> new StageAssignment(s.getNodeId(), s.getLayerStart(), s.getLayerEnd(),
                                s.getHasEmbedding(), s.getHasHead(), s.getExpertGroupsList().stream()
                                .map(g -> new ExpertGroup(g.getNodeId(), g.getFirstExpert(), g.getEndExpert()))
                                .toList()))
                        .toList(), c.hasReason() ? c.getReason() : "", at);
            }
            case LOAD_PROGRESSED: {
                LoadProgressedCommand c = proto.getLoadProgressed();
                return new ClusterCommand.LoadProgressed(c.getNodeId(), c.getEpoch(),
                        PartitionState.valueOf(c.getPhase()), c.getProgress(),
                        c.hasCurrentFile() ? c.getCurrentFile() : null, at);
            }
            case LOAD_COMPLETED: {
                LoadCompletedCommand c = proto.getLoadCompleted();
                return new ClusterCommand.LoadCompleted(c.getNodeId(), c.getEpoch(),
                        c.hasPartitionChecksum() ? c.getPartitionChecksum() : null, c.getKvCacheBudgetBytes(), at);
            }
            case LOAD_FAILED: {
                LoadFailedCommand c = proto.getLoadFailed();
                return new ClusterCommand.LoadFailed(c.getNodeId(), c.getEpoch(),
                        c.hasErrorCode() ? c.getErrorCode() : null,
                        c.hasErrorMessage() ? c.getErrorMessage() : null, at);
            }
            case TASK_SUBMITTED: {
                TaskSubmittedCommand c = proto.getTaskSubmitted();
                return new ClusterCommand.TaskSubmitted(c.getTaskId(), c.getPromptTokens(), c.getOwner(),
                        c.getOwnerStartedAtMs(), at);
            }
            case TASK_FINISHED: {
                TaskFinishedCommand c = proto.getTaskFinished();
                return new ClusterCommand.TaskFinished(c.getTaskId(), c.getTokenIdsList(),
                        c.hasFinishReason() ? c.getFinishReason() : null, at);
            }
            case TASK_FAILED: {
                TaskFailedCommand c = proto.getTaskFailed();
                return new ClusterCommand.TaskFailed(c.getTaskId(), c.hasError() ? c.getError() : null, at);
            }
            case TASKS_RECORDED: {
                TasksRecordedCommand c = proto.getTasksRecorded();
                return new ClusterCommand.TasksRecorded(c.getReplica(), c.getReplicaStartedAtMs(),
                        c.getEventsList().stream().map(TaskEventMapper::fromProto).toList(), at);
            }
            case SHUTDOWN: {
                ShutdownCommand c = proto.getShutdown();
                return new ClusterCommand.Shutdown(c.hasReason() ? c.getReason() : null, at);
            }
            case CLEANUP_COMPLETED:
                return new ClusterCommand.CleanupCompleted(at);
            case NODE_SUSPECTED: {
                NodeSuspectedCommand c = proto.getNodeSuspected();
                return new ClusterCommand.NodeSuspected(c.getNodeId(), c.getLastHeartbeatMs(), c.getPhi(),
                        c.hasCause() ? c.getCause() : null, at);
            }
            case NODE_SUSPICION_CLEARED: {
                NodeSuspicionClearedCommand c = proto.getNodeSuspicionCleared();
                return new ClusterCommand.NodeSuspicionCleared(c.getNodeId(), c.getLastHeartbeatMs(), at);
            }
            case NODE_FAILED: {
                NodeFailedCommand c = proto.getNodeFailed();
                return new ClusterCommand.NodeFailed(c.getNodeId(), c.getLastHeartbeatMs(), c.getPhi(),
                        c.hasCause() ? c.getCause() : null, at);
            }
            case NODE_BYZANTINE: {
                NodeByzantineCommand c = proto.getNodeByzantine();
                return new ClusterCommand.NodeByzantine(c.getNodeId(), c.getCause(), at);
            }
            case NODE_RECOVERED: {
                NodeRecoveredCommand c = proto.getNodeRecovered();
                return new ClusterCommand.NodeRecovered(c.getNodeId(), c.getPartitionIntact(), c.getLastHeartbeatMs(), at);
            }
            case NODE_DRAIN_REQUESTED:
                return new ClusterCommand.NodeDrainRequested(proto.getNodeDrainRequested().getNodeId(), at);
            case NODE_LEFT: {
                NodeLeftCommand c = proto.getNodeLeft();
                return new ClusterCommand.NodeLeft(c.getNodeId(), c.hasReason() ? c.getReason() : "", at);
            }
            case CHECKPOINT:
                return new ClusterCommand.Checkpoint(proto.getCheckpoint().getEpoch(),
                        proto.getCheckpoint().getMerkleRoot(), at);
            case NO_OP:
                return new ClusterCommand.NoOp(proto.getNoOp().getReplicaId(), proto.getNoOp().getTerm(), at);
            case COMMAND_NOT_SET:
            default:
                throw new IllegalArgumentException("control-log entry has no known command: " + proto.getCommandCase());
        }
    }

    private static ControlNodeInfo toProto(NodeInfo info) {
        ControlNodeInfo.Builder b = ControlNodeInfo.newBuilder().setNodeId(info.nodeId()).setGrpcPort(info.grpcPort())
                .setHttpPort(info.httpPort()).setCpuCores(info.cpuCores()).setMemoryBytes(info.memoryBytes())
                .setThroughput(info.throughput()).setWeightBytes(info.weightBytes());
        ifPresent(info.role(), b::setRole);
        ifPresent(info.host(), b::setHost);
        ifPresent(info.device(), b::setDevice);
        return b.build();
    }

    private static NodeInfo fromProto(ControlNodeInfo p) {
        return new NodeInfo(p.getNodeId(), p.hasRole() ? p.getRole() : null, p.hasHost() ? p.getHost() : null,
                p.getGrpcPort(), p.getHttpPort(), p.getCpuCores(), p.getMemoryBytes(), p.getThroughput(),
                p.hasDevice() ? p.getDevice() : null, p.getWeightBytes());
    }

    private static void ifPresent(String value, Consumer<String> setter) {
        if (value != null) {
            setter.accept(value);
        }
    }
}
