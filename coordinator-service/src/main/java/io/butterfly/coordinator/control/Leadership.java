package io.butterfly.coordinator.control;

/**
 * What one replica knows about the Raft leadership at a moment.
 *
 * @param selfId   this replica's peer id
 * @param leaderId the leader this replica follows (null while none is known, e.g. during an election)
 * @param term     the Raft term; it is the fencing token of every assignment the leader makes
 * @param ready    this replica is the leader and has committed its first entry of the term, so its state
 *                 machine is up to date and leader-only work may start
 */
public record Leadership(String selfId, String leaderId, long term, boolean ready) {

    static Leadership none(String selfId) {
        return new Leadership(selfId, null, 0, false);
    }

    /** Whether this replica may do leader-only work now. */
    public boolean leading() {
        return ready && selfId.equals(leaderId);
    }
}
