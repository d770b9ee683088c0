package io.butterfly.coordinator.raft;

import io.butterfly.common.tls.ClusterTls;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * How one control-log replica runs (Spring-free; config/ builds it from {@code butterfly.coordinator.raft}).
 *
 * @param selfId               this replica's peer id (one of {@code peers})
 * @param peers                every replica of the group, this one included
 * @param groupName            names the Raft group; replicas of one cluster must agree on it
 * @param storageDir           durable Raft log and snapshots of this replica
 * @param electionTimeoutMin   lower bound of the randomized election timeout
 * @param electionTimeoutMax   upper bound of the randomized election timeout
 * @param snapshotThreshold    a snapshot is taken every this many applied entries
 * @param requestTimeout       how long a submit may wait for a commit before it fails
 * @param bindHost             address the Raft server listens on, or null for its own peer host
 * @param logRetention         how much of the log is kept once a snapshot holds it
 * @param tls                  this node's mutual TLS, which the replicas speak among themselves (or plaintext)
 */
public record ReplicaSettings(String selfId, List<Peer> peers, String groupName, Path storageDir,
                              Duration electionTimeoutMin, Duration electionTimeoutMax, long snapshotThreshold,
                              Duration requestTimeout, String bindHost, LogRetention logRetention, ClusterTls tls) {

    public ReplicaSettings {
        peers = List.copyOf(peers);
        Objects.requireNonNull(logRetention, "logRetention");
        Objects.requireNonNull(tls, "tls");
        if (snapshotThreshold < 1) {
            throw new IllegalArgumentException("snapshot-threshold must be at least 1, not " + snapshotThreshold);
        }
        if (peers.stream().noneMatch(p -> p.id().equals(selfId))) {
            throw new IllegalArgumentException("raft peers " + peers + " do not include this replica '" + selfId + "'");
        }
        if (peers.stream().map(Peer::id).distinct().count() != peers.size()) {
            throw new IllegalArgumentException("raft peer ids must be unique: " + peers);
        }
        if (electionTimeoutMax.compareTo(electionTimeoutMin) <= 0) {
            throw new IllegalArgumentException("election-timeout-max must exceed election-timeout-min");
        }
    }

    public Peer self() {
        return peers.stream().filter(p -> p.id().equals(selfId)).findFirst().orElseThrow();
    }

    /** Where the Raft server listens: the configured bind host, else this replica's peer host. */
    public String listenHost() {
        return bindHost != null ? bindHost : self().host();
    }

    /** Stable group id derived from the group name, so every replica computes the same one. */
    UUID groupUuid() {
        return UUID.nameUUIDFromBytes(("butterfly-control-log:" + groupName).getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The log is cut behind each snapshot, so it stays bounded: every task is a log entry, and a replica that is
     * down for good must not pin the log on the others (it catches up from the leader's snapshot when it returns).
     *
     * @param segmentBytes     a log segment is closed at this size; only closed segments are deleted
     * @param preservedEntries the newest entries never cut (Ratis cuts up to min(snapshot index, last index - this)),
     *                         so a replica lagging by fewer catches up from the log rather than by a whole snapshot
     */
    public record LogRetention(long segmentBytes, long preservedEntries) {

        /** 8 MB segments (thousands of task entries), and as many entries kept as a default snapshot interval. */
        public static final LogRetention DEFAULT = new LogRetention(8L << 20, 1000);

        public LogRetention {
            if (segmentBytes < 1024) {
                throw new IllegalArgumentException("log-segment-size must be at least 1KB, not " + segmentBytes + " bytes");
            }
            if (preservedEntries < 0) {
                throw new IllegalArgumentException("log-preserved-entries must not be negative, not " + preservedEntries);
            }
        }
    }

    /** One replica's Raft address. */
    public record Peer(String id, String host, int port) {

        /** Parses {@code id=host:port}. */
        public static Peer parse(String spec) {
            int eq = spec.indexOf('=');
            int colon = spec.lastIndexOf(':');
            if (eq <= 0 || colon < eq + 2 || colon == spec.length() - 1) {
                throw new IllegalArgumentException("raft peer '" + spec + "' is not id=host:port");
            }
            int port;
            try {
                port = Integer.parseInt(spec.substring(colon + 1).trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("raft peer '" + spec + "' has no numeric port");
            }
            if (port <= 0 || port > 65535) {
                throw new IllegalArgumentException("raft peer '" + spec + "' has port out of range");
            }
            return new Peer(spec.substring(0, eq).trim(), spec.substring(eq + 1, colon).trim(), port);
        }

        public String address() {
            return host + ":" + port;
        }

        @Override
        public String toString() {
            return id + "=" + address();
        }
    }
}
