package io.butterfly.coordinator.simulation;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.raft.ControlCommandMapper;

/**
 * The control log of the simulation: every command goes through what a replica does with a log entry apart from Raft's
 * replication and disk (encoded to the entry's bytes by {@link ControlCommandMapper}, decoded, applied by the pure
 * {@link ClusterReducer}), and the bytes are counted by the kind of change. A refused command throws, as it does from
 * the real log, and changes nothing.
 */
final class SimulatedControlLog {

    private ClusterState state = ClusterState.initial();
    private long index;
    private long membershipBytes;
    private long taskBytes;
    private long entries;

    ClusterState state() {
        return state;
    }

    ClusterState submit(ClusterCommand command) {
        byte[] entry = ControlCommandMapper.serialize(command);
        if (command instanceof ClusterCommand.TasksRecorded) {
            taskBytes += entry.length;
        } else {
            membershipBytes += entry.length;
        }
        entries++;
        // A refused entry still takes its index, as a committed entry the reducer refuses does on every replica.
        ClusterState next = ClusterReducer.apply(state, ControlCommandMapper.deserialize(entry), ++index);
        state = next;
        return next;
    }

    /** Bytes of every entry that is not a task record (membership, liveness, plans, loads, validation). */
    long controlBytes() {
        return membershipBytes;
    }

    long taskBytes() {
        return taskBytes;
    }

    long entries() {
        return entries;
    }
}
