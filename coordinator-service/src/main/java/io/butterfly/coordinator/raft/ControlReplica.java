package io.butterfly.coordinator.raft;

import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.tls.ClusterTls;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NotReadyException;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.control.Leadership;
import io.butterfly.coordinator.control.LeadershipEvents;
import io.butterfly.coordinator.control.RaftStatus;
import io.butterfly.coordinator.control.ReplicaView;
import io.butterfly.proto.coordinator.v1.ControlApplyResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.grpc.GrpcTlsConfig;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.GroupInfoReply;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.exceptions.AlreadyClosedException;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One replica of the coordinators' control log: a Ratis server running {@link ControlStateMachine} plus a
 * client that submits commands to whichever replica leads. Reads ({@link #state()}) are local.
 */
public final class ControlReplica implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ControlReplica.class);
    private static final long RETRY_SLEEP_MS = 100;

    private final ReplicaSettings settings;
    private final RaftGroup group;
    private final LeadershipEvents leadership;
    private final ControlStateMachine machine;
    private final RaftServer server;
    /**
     * Commands go through it. Ratis closes an ordered async client for good once one of its requests fails terminally
     * (a peer's proxy closed while it restarted, say): every later command then fails with "RAFT is closed", and a
     * replica that leads with such a client cannot commit anything, its own no-op included, until leadership moves
     * (seen in FaultScheduleIT: READY two minutes after the last fault). So a closed one is replaced.
     */
    private volatile RaftClient client;
    private final RaftProperties clientProperties;
    private final int clientAttempts;
    private volatile boolean closed;
    /** Ratis' TLS settings, for the server and every client this replica makes. */
    private final Parameters transport;
    private RaftClient adminClient;

    private ControlReplica(ReplicaSettings settings) throws IOException {
        this.settings = settings;
        List<RaftPeer> peers = settings.peers().stream()
                .map(p -> RaftPeer.newBuilder().setId(p.id()).setAddress(p.address()).build()).toList();
        this.group = RaftGroup.valueOf(RaftGroupId.valueOf(settings.groupUuid()), peers);
        this.leadership = new LeadershipEvents(settings.selfId());
        this.machine = new ControlStateMachine(leadership);
        RaftProperties properties = properties(settings);
        this.transport = transport(settings.tls());
        Files.createDirectories(settings.storageDir());
        this.server = RaftServer.newBuilder()
                .setServerId(RaftPeerId.valueOf(settings.selfId()))
                .setGroup(group)
                .setProperties(properties)
                .setParameters(transport)
                .setStateMachine(machine)
                .setOption(hasStorage(settings.storageDir()) ? RaftStorage.StartupOption.RECOVER
                        : RaftStorage.StartupOption.FORMAT)
                .build();
        this.clientProperties = new RaftProperties();
        // One attempt may take a third of the budget: a hung old leader leaves time to find the new one.
        RaftClientConfigKeys.Rpc.setRequestTimeout(clientProperties,
                duration(Math.max(500, settings.requestTimeout().toMillis() / 3)));
        // Ride out an election (leader lost); submit() bounds the total wait by request-timeout.
        this.clientAttempts = (int) Math.max(3, 2 * settings.requestTimeout().toMillis() / RETRY_SLEEP_MS);
        this.client = newClient();
    }

    private RaftClient newClient() {
        return RaftClient.newBuilder()
                .setRaftGroup(group)
                .setProperties(clientProperties)
                .setParameters(transport)
                .setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(clientAttempts,
                        duration(RETRY_SLEEP_MS)))
                .build();
    }

    /** Replaces {@code broken} (closed by Ratis) with a new client, unless another caller did or the replica stops. */
    private void replaceClosedClient(RaftClient broken, Throwable why) {
        synchronized (this) {
            if (closed || client != broken) {
                return;
            }
            client = newClient();
        }
        log.warn("raft: replica {}'s client was closed by Ratis ({}): replaced", settings.selfId(), why.toString());
        try {
            broken.close();
        } catch (IOException | RuntimeException e) {
            log.debug("closing the closed raft client", e);
        }
    }

    private static boolean closedByRatis(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof AlreadyClosedException) {
                return true;
            }
        }
        return false;
    }

    /** The client commands go through now (tests close it as Ratis would). */
    RaftClient client() {
        return client;
    }

    /** Starts the replica: recovers its storage (snapshot + log) and joins the group. */
    public static ControlReplica start(ReplicaSettings settings) throws IOException {
        ControlReplica replica = new ControlReplica(settings);
        try {
            replica.server.start(); // loads the newest snapshot (checksum verified) and replays the log after it
        } catch (IOException | RuntimeException e) {
            replica.close();
            throw e;
        }
        log.info("raft: replica {} started on {} (group of {}: {}), storage {}", settings.selfId(),
                settings.self().address(), settings.peers().size(), settings.peers(), settings.storageDir());
        return replica;
    }

    static RaftProperties properties(ReplicaSettings s) {
        RaftProperties p = new RaftProperties();
        GrpcConfigKeys.Server.setHost(p, s.listenHost());
        GrpcConfigKeys.Server.setPort(p, s.self().port());
        RaftServerConfigKeys.setStorageDir(p, List.of(s.storageDir().toFile()));
        RaftServerConfigKeys.Rpc.setTimeoutMin(p, duration(s.electionTimeoutMin().toMillis()));
        RaftServerConfigKeys.Rpc.setTimeoutMax(p, duration(s.electionTimeoutMax().toMillis()));
        RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMin(p, duration(s.electionTimeoutMin().toMillis()));
        RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMax(p, duration(s.electionTimeoutMax().toMillis()));
        RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(p, true);
        RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(p, s.snapshotThreshold());
        RaftServerConfigKeys.Snapshot.setRetentionFileNum(p, 2);
        // Ratis' default keeps every entry some replica has not committed: one replica down for good would make the
        // others' logs grow with every task. Cut at the snapshot instead; a replica that returns later than the
        // preserved entries reach is sent the snapshot (ControlStateMachine.reinitialize loads it).
        RaftServerConfigKeys.Log.setPurgeUptoSnapshotIndex(p, true);
        RaftServerConfigKeys.Log.setPurgePreservationLogNum(p, s.logRetention().preservedEntries());
        RaftServerConfigKeys.Log.setPurgeGap(p, (int) Math.min(s.snapshotThreshold(), Integer.MAX_VALUE));
        RaftServerConfigKeys.Log.setSegmentSizeMax(p, SizeInBytes.valueOf(s.logRetention().segmentBytes()));
        // Ratis closes a server whose JVM paused past 60 s, for good: the coordinator lived on without Raft, never led
        // again and the cluster never became READY (seen twice on a loaded machine whose processes were stopped for a
        // minute or more during a multi-gigabyte load). A paused replica rejoins as any slow one does.
        RaftServerConfigKeys.setCloseThreshold(p, TimeDuration.valueOf(1, TimeUnit.DAYS));
        return p;
    }

    /**
     * Raft between coordinators only: mutual TLS 1.3 with this node's certificate, and every peer, as server or as
     * client, must be certified as a coordinator (a worker's certificate from the same CA is refused). Nothing when
     * TLS is off.
     */
    static Parameters transport(ClusterTls tls) {
        Parameters p = new Parameters();
        if (tls.enabled()) {
            GrpcConfigKeys.TLS.setConf(p, new GrpcTlsConfig(tls.keyManagers().getKeyManagers()[0],
                    tls.trustManager(NodeRole.COORDINATOR), true));
        }
        return p;
    }

    private static boolean hasStorage(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.findAny().isPresent();
        }
    }

    private static TimeDuration duration(long millis) {
        return TimeDuration.valueOf(millis, TimeUnit.MILLISECONDS);
    }

    /**
     * Commits a command through the leader and returns this replica's state once it has applied it. A refused
     * command throws the reducer's exception ({@link NotReadyException}, {@link IllegalTransitionException},
     * {@link IllegalArgumentException}); a commit that cannot happen throws {@link ControlLogUnavailableException}.
     */
    public ClusterState submit(ClusterCommand command) {
        RaftClientReply reply;
        // Asynchronous send, bounded wait: the client retries across an election, but a group without a
        // quorum must not hold the caller for longer than request-timeout. (A timed-out command may still
        // commit later; the caller only learns that it was not confirmed.)
        RaftClient via = client;
        CompletableFuture<RaftClientReply> sent = via.async().send(
                Message.valueOf(ByteString.copyFrom(ControlCommandMapper.serialize(command))));
        try {
            reply = sent.get(settings.requestTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            sent.cancel(true);
            throw new ControlLogUnavailableException("control log unavailable: no leader committed the command within "
                    + settings.requestTimeout().toMillis() + " ms", e);
        } catch (ExecutionException e) {
            if (closedByRatis(e.getCause())) {
                replaceClosedClient(via, e.getCause()); // this command failed; the caller's next one goes through
            }
            throw new ControlLogUnavailableException("control log unavailable: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            sent.cancel(true);
            Thread.currentThread().interrupt();
            throw new ControlLogUnavailableException("interrupted while committing a command", e);
        }
        if (!reply.isSuccess()) {
            throw new ControlLogUnavailableException("control log refused the entry: " + reply.getException(),
                    reply.getException());
        }
        ControlApplyResult result;
        try {
            result = ControlApplyResult.parseFrom(reply.getMessage().getContent().toByteArray());
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            throw new IllegalStateException("unreadable control-log reply", e);
        }
        switch (result.getRefusal()) {
            case "":
                break;
            case ControlStateMachine.NOT_READY:
                throw new NotReadyException(result.getMessage());
            case ControlStateMachine.ILLEGAL_TRANSITION:
                throw new IllegalTransitionException(result.getMessage());
            default:
                throw new IllegalArgumentException(result.getMessage());
        }
        try {
            return machine.awaitApplied(result.getIndex(), settings.requestTimeout().toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ControlLogUnavailableException("interrupted while waiting for entry " + result.getIndex(), e);
        }
    }

    /** This replica's state (it may lag the leader by the entries not yet applied here). */
    public ClusterState state() {
        return machine.state();
    }

    /** The Ratis state machine itself (the tests drive its lifecycle as Ratis does). */
    ControlStateMachine stateMachine() {
        return machine;
    }

    public LeadershipEvents leadership() {
        return leadership;
    }

    public void addAppliedListener(ControlLog.AppliedListener listener) {
        machine.addAppliedListener(listener);
    }

    public ReplicaSettings settings() {
        return settings;
    }

    public RaftStatus status() {
        List<String> peers = settings.peers().stream().map(ReplicaSettings.Peer::toString).toList();
        try {
            RaftServer.Division division = server.getDivision(group.getGroupId());
            DivisionInfo info = division.getInfo();
            RaftPeerId leader = info.getLeaderId();
            return new RaftStatus(settings.selfId(), info.getCurrentRole().name(), leader == null ? null : leader.toString(),
                    info.getCurrentTerm(), info.getLastAppliedIndex(), division.getRaftLog().getStartIndex(), peers);
        } catch (IOException | RuntimeException e) {
            Leadership l = leadership.current();
            return new RaftStatus(settings.selfId(), String.valueOf(server.getLifeCycleState()), l.leaderId(), l.term(),
                    machine.state().lastAppliedIndex(), -1, peers);
        }
    }

    /**
     * Index to term of every committed entry this replica's log still holds (those before its start live only in
     * snapshots): what a checker compares between replicas, as Raft's log matching says committed entries agree.
     */
    public java.util.NavigableMap<Long, Long> committedTerms() throws IOException {
        RaftLog log = server.getDivision(group.getGroupId()).getRaftLog();
        java.util.NavigableMap<Long, Long> out = new java.util.TreeMap<>();
        long start = Math.max(0, log.getStartIndex());
        for (long i = start; i <= log.getLastCommittedIndex(); i++) {
            TermIndex ti = log.getTermIndex(i);
            if (ti != null) {
                out.put(i, ti.getTerm());
            }
        }
        return out;
    }

    /**
     * Every replica's own view, this one's from its server and the others' asked over Ratis' group-info RPC
     * (a short timeout, no retries): the single-leader invariant is then checked on claims each replica makes
     * itself, not on this replica's belief about them. A peer that does not answer is UNREACHABLE.
     */
    public List<ReplicaView> groupViews() {
        List<ReplicaView> views = new java.util.ArrayList<>();
        RaftStatus self = status();
        views.add(new ReplicaView(self.selfId(), self.role(), "LEADER".equals(self.role()) ? self.term() : 0));
        for (ReplicaSettings.Peer p : settings.peers()) {
            if (p.id().equals(settings.selfId())) {
                continue;
            }
            views.add(askPeer(p.id()));
        }
        return views;
    }

    private ReplicaView askPeer(String peerId) {
        try {
            GroupInfoReply reply = adminClient().getGroupManagementApi(RaftPeerId.valueOf(peerId)).info(group.getGroupId());
            RoleInfoProto role = reply.getRoleInfoProto();
            long term = role.hasLeaderInfo() ? role.getLeaderInfo().getTerm() : 0;
            return new ReplicaView(peerId, role.getRole().name(), term);
        } catch (IOException | RuntimeException e) {
            log.debug("raft: replica {} did not say its role: {}", peerId, e.toString());
            return new ReplicaView(peerId, ReplicaView.UNREACHABLE, 0);
        }
    }

    /** A client for group-info questions: one short attempt, so a dead peer costs little. */
    private synchronized RaftClient adminClient() {
        if (adminClient == null) {
            RaftProperties p = new RaftProperties();
            RaftClientConfigKeys.Rpc.setRequestTimeout(p, duration(300));
            adminClient = RaftClient.newBuilder().setRaftGroup(group).setProperties(p).setParameters(transport)
                    .setRetryPolicy(RetryPolicies.noRetry()).build();
        }
        return adminClient;
    }

    /** Takes a snapshot on this replica now (also taken automatically every snapshot-threshold entries). */
    public long snapshot() throws IOException {
        RaftClientReply reply = client.getSnapshotManagementApi(RaftPeerId.valueOf(settings.selfId()))
                .create(settings.requestTimeout().toMillis());
        if (!reply.isSuccess()) {
            throw new IOException("snapshot failed: " + reply.getException(), reply.getException());
        }
        return reply.getLogIndex();
    }

    @Override
    public void close() {
        try {
            RaftClient last;
            synchronized (this) {
                closed = true;
                last = client;
                if (adminClient != null) {
                    adminClient.close();
                }
            }
            last.close();
        } catch (IOException e) {
            log.debug("closing raft client", e);
        }
        try {
            server.close();
        } catch (IOException e) {
            log.warn("closing raft server {}", settings.selfId(), e);
        }
        leadership.close();
    }
}
