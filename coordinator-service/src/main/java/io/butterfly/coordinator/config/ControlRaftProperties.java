package io.butterfly.coordinator.config;

import java.time.Duration;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * The coordinators' Raft group (control log). The defaults run the embedded default: one replica, named
 * after the coordinator's node id, on 127.0.0.1 at the coordinator's gRPC port + {@code portShift}
 * (9080 + 20 = 9100), storing its log and snapshots in {@code <data-dir>/raft}.
 *
 * @param peerId             this replica's id (empty: the coordinator's node id)
 * @param peers              every replica as {@code id=host:port}, this one included (empty: just this one)
 * @param portShift          raft port = gRPC port + this, for the default single peer
 * @param groupName          replicas of one cluster share it (empty: the cluster name)
 * @param electionTimeoutMin lower bound of the randomized election timeout (short: fast failover)
 * @param electionTimeoutMax upper bound of the randomized election timeout
 * @param snapshotThreshold  a snapshot of the cluster state is taken every this many log entries
 * @param requestTimeout     how long one command may wait to be committed
 * @param replicaGrpcEndpoints every replica's gRPC endpoint for workers, as {@code id=host:port} (empty: only
 *                           this one); assignments list them so workers heartbeat every replica
 * @param bindHost           address this replica's Raft server listens on (empty: its own peer host). On
 *                           Kubernetes the pod IP: the peer host is the pod's DNS name, which may not
 *                           resolve yet when the replica first starts
 * @param logSegmentSize     a log segment is closed at this size; the log is cut behind each snapshot a closed
 *                           segment at a time
 * @param logPreservedEntries the newest entries never cut, so a replica lagging by fewer catches up from the log
 *                           instead of being sent the whole snapshot
 */
@ConfigurationProperties("butterfly.coordinator.raft")
public record ControlRaftProperties(
        @DefaultValue("") String peerId,
        @DefaultValue List<String> peers,
        @DefaultValue("20") int portShift,
        @DefaultValue("") String groupName,
        @DefaultValue("150ms") Duration electionTimeoutMin,
        @DefaultValue("300ms") Duration electionTimeoutMax,
        @DefaultValue("1000") long snapshotThreshold,
        @DefaultValue("5s") Duration requestTimeout,
        @DefaultValue List<String> replicaGrpcEndpoints,
        @DefaultValue("") String bindHost,
        @DefaultValue("8MB") DataSize logSegmentSize,
        @DefaultValue("1000") long logPreservedEntries) {
}
