package io.butterfly.coordinator.control;

import java.util.List;

/**
 * This replica's view of the control-log group, for {@code GET /api/v1/system/state}.
 *
 * @param selfId          this replica's peer id
 * @param role            LEADER, FOLLOWER, CANDIDATE (or the server's life-cycle state when not running)
 * @param leaderId        the known leader (null during an election)
 * @param term            current Raft term
 * @param lastAppliedIndex last log index applied by this replica's state machine
 * @param logStartIndex   the oldest entry this replica's log still holds (those before it live only in snapshots);
 *                        -1 when the log is empty (cut right at a snapshot) or the server cannot say
 * @param peers           every replica as {@code id=host:port}
 */
public record RaftStatus(String selfId, String role, String leaderId, long term, long lastAppliedIndex,
                         long logStartIndex, List<String> peers) {
}
