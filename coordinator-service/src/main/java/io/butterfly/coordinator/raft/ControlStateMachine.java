package io.butterfly.coordinator.raft;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NotReadyException;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.control.LeadershipEvents;
import io.butterfly.proto.coordinator.v1.ControlApplyResult;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import io.butterfly.common.fs.DurableFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.StateMachineStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.MD5FileUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Ratis state machine of the control log: a thin adapter over the pure {@link ClusterReducer}. Every
 * replica applies the same committed entries in the same order and so holds the same {@link ClusterState}.
 * A command the reducer refuses is a no-op on every replica (deterministically: same state, same command);
 * the refusal is returned to the submitter only.
 */
public class ControlStateMachine extends BaseStateMachine {

    private static final Logger log = LoggerFactory.getLogger(ControlStateMachine.class);

    static final String NOT_READY = "NOT_READY";
    static final String ILLEGAL_TRANSITION = "ILLEGAL_TRANSITION";
    static final String INVALID_COMMAND = "INVALID_COMMAND";

    private final SimpleStateMachineStorage storage = new SimpleStateMachineStorage();
    private final LeadershipEvents leadership;
    private final List<ControlLog.AppliedListener> listeners = new CopyOnWriteArrayList<>();
    /** Guards state together with the last applied term-index, so a snapshot pairs them consistently. */
    private final Object lock = new Object();
    private volatile ClusterState state = ClusterState.initial();

    public ControlStateMachine(LeadershipEvents leadership) {
        this.leadership = leadership;
    }

    public ClusterState state() {
        return state;
    }

    public void addAppliedListener(ControlLog.AppliedListener listener) {
        listeners.add(listener);
    }

    /** Waits until this replica has applied {@code index} (or later); a follower lags the leader a little. */
    ClusterState awaitApplied(long index, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        synchronized (lock) {
            while (getLastAppliedTermIndex().getIndex() < index) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    throw new ControlLogUnavailableException("entry " + index + " committed but not applied here within "
                            + timeoutMs + " ms", null);
                }
                lock.wait(left);
            }
            return state;
        }
    }

    // --- lifecycle and snapshots -------------------------------------------------------------------

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        getLifeCycle().startAndTransition(() -> {
            super.initialize(server, groupId, raftStorage);
            storage.init(raftStorage);
            load(storage.getLatestSnapshot());
        }, IOException.class);
    }

    /**
     * Ratis pauses the state machine before it installs a snapshot from the leader on a follower that lags past the
     * leader's log, and reloads it only from PAUSED: without this (BaseStateMachine's pause does nothing) the
     * follower's applier thread fails the reload and Ratis closes the replica.
     */
    @Override
    public void pause() {
        if (getLifeCycleState() == LifeCycle.State.RUNNING) {
            getLifeCycle().transition(LifeCycle.State.PAUSING);
            getLifeCycle().transition(LifeCycle.State.PAUSED);
        }
    }

    /** Called after a snapshot was installed from the leader: its state replaces this replica's, which runs on. */
    @Override
    public void reinitialize() throws IOException {
        load(storage.loadLatestSnapshot());
        if (getLifeCycleState() == LifeCycle.State.PAUSED) {
            getLifeCycle().transition(LifeCycle.State.STARTING);
            getLifeCycle().transition(LifeCycle.State.RUNNING);
        }
    }

    @Override
    public StateMachineStorage getStateMachineStorage() {
        return storage;
    }

    private void load(SingleFileSnapshotInfo snapshot) throws IOException {
        if (snapshot == null) {
            log.info("raft: no control-state snapshot; replaying the log from the start");
            return;
        }
        Path file = snapshot.getFile().getPath();
        ClusterState loaded = ClusterStateCodec.decode(Files.readAllBytes(file)); // verifies the SHA-256
        synchronized (lock) {
            state = loaded;
            setLastAppliedTermIndex(snapshot.getTermIndex());
            lock.notifyAll();
        }
        log.info("raft: loaded control-state snapshot {} ({}; system {})", file.getFileName(), snapshot.getTermIndex(),
                loaded.system());
    }

    @Override
    public long takeSnapshot() throws IOException {
        ClusterState snapshotState;
        TermIndex last;
        synchronized (lock) {
            snapshotState = state;
            last = getLastAppliedTermIndex();
        }
        if (last == null || last.getIndex() < 0) {
            return -1;
        }
        File file = storage.getSnapshotFile(last.getTerm(), last.getIndex());
        Path tmp = file.toPath().resolveSibling(file.getName() + ".tmp");
        // On disk before it is named: after a power loss a renamed but unwritten snapshot would be empty, fail
        // its SHA-256 check and keep the replica from starting although an older one would have done.
        try (FileChannel out = FileChannel.open(tmp,
                StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            ByteBuffer bytes = ByteBuffer.wrap(ClusterStateCodec.encode(snapshotState));
            while (bytes.hasRemaining()) {
                out.write(bytes);
            }
            out.force(true);
        }
        Files.move(tmp, file.toPath(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        // Ratis verifies the MD5 when it ships the snapshot to a lagging follower.
        FileInfo info = new FileInfo(file.toPath(), MD5FileUtil.computeAndSaveMd5ForFile(file));
        // The rename (and the MD5 file) are directory entries: without this a power cut may forget the snapshot
        // Ratis is about to purge the log behind.
        DurableFiles.syncDirectory(file.toPath().getParent());
        storage.updateLatestSnapshot(new SingleFileSnapshotInfo(info, last));
        log.info("raft: took control-state snapshot at {}", last);
        return last.getIndex();
    }

    // --- applying the log ----------------------------------------------------------------------------

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
        LogEntryProto entry = trx.getLogEntry();
        long index = entry.getIndex();
        ControlApplyResult.Builder result = ControlApplyResult.newBuilder().setIndex(index);
        synchronized (lock) {
            ClusterState before = state;
            try {
                ClusterCommand command = ControlCommandMapper.deserialize(
                        entry.getStateMachineLogEntry().getLogData().toByteArray());
                ClusterState after = ClusterReducer.apply(before, command, index);
                state = after;
                fireApplied(before, after, command, index);
            } catch (NotReadyException e) {
                result.setRefusal(NOT_READY).setMessage(String.valueOf(e.getMessage()));
            } catch (IllegalTransitionException e) {
                result.setRefusal(ILLEGAL_TRANSITION).setMessage(String.valueOf(e.getMessage()));
            } catch (IllegalArgumentException e) {
                result.setRefusal(INVALID_COMMAND).setMessage(String.valueOf(e.getMessage()));
            }
            // Advanced after the listeners ran: a submitter waiting for this index sees their effects too.
            updateLastAppliedTermIndex(entry.getTerm(), index);
            lock.notifyAll();
        }
        return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFrom(result.build().toByteArray())));
    }

    /** Entries without a command (leader no-ops, configuration changes) still advance the applied index. */
    @Override
    public void notifyTermIndexUpdated(long term, long index) {
        synchronized (lock) {
            super.notifyTermIndexUpdated(term, index);
            lock.notifyAll();
        }
    }

    private void fireApplied(ClusterState before, ClusterState after, ClusterCommand command, long index) {
        for (ControlLog.AppliedListener l : listeners) {
            try {
                l.applied(before, after, command, index);
            } catch (RuntimeException e) {
                log.warn("applied-listener failed at index {}", index, e);
            }
        }
    }

    // --- leadership ------------------------------------------------------------------------------------

    @Override
    public void notifyLeaderChanged(RaftGroupMemberId memberId, RaftPeerId newLeaderId) {
        leadership.leaderChanged(newLeaderId == null ? null : newLeaderId.toString(), currentTerm());
    }

    @Override
    public void notifyLeaderReady() {
        leadership.leaderReady(currentTerm());
    }

    @Override
    public void notifyNotLeader(Collection<TransactionContext> pendingEntries) {
        leadership.notLeader(currentTerm());
    }

    private long currentTerm() {
        try {
            return getServer().join().getDivision(getGroupId()).getInfo().getCurrentTerm();
        } catch (IOException | RuntimeException e) {
            return leadership.current().term();
        }
    }
}
