package io.butterfly.coordinator.control;

/** A replica's leadership view in a chosen role, for tests of leader-only work without a Raft group. */
public final class TestLeadership {

    private TestLeadership() {
    }

    /** This replica is the ready leader of {@code term}. */
    public static LeadershipEvents leading(String selfId, long term) {
        LeadershipEvents events = new LeadershipEvents(selfId);
        events.leaderChanged(selfId, term);
        events.leaderReady(term);
        return events;
    }

    /** This replica follows {@code leaderId} in {@code term}. */
    public static LeadershipEvents following(String selfId, String leaderId, long term) {
        LeadershipEvents events = new LeadershipEvents(selfId);
        events.leaderChanged(leaderId, term);
        return events;
    }
}
