package io.butterfly.discovery.membership;

import java.util.Optional;

/**
 * A backend whose joins are kept by another store ({@code joined}) and which only adds members to the
 * listing (static seeds, Consul's catalog): every write and lookup goes to {@code joined}; subclasses
 * implement {@link #members(String)}.
 */
public abstract class ListingMembershipStore implements MembershipStore {

    protected final MembershipStore joined;

    protected ListingMembershipStore(MembershipStore joined) {
        this.joined = joined;
    }

    @Override
    public MemberView admit(MemberView candidate) {
        return joined.admit(candidate);
    }

    @Override
    public Optional<MemberView> acknowledge(String nodeId, long nowMs) {
        return joined.acknowledge(nodeId, nowMs);
    }

    @Override
    public Optional<MemberView> touch(String nodeId, long nowMs) {
        return joined.touch(nodeId, nowMs);
    }

    @Override
    public Optional<MemberView> member(String nodeId) {
        return joined.member(nodeId);
    }

    @Override
    public int size() {
        return joined.size();
    }

    @Override
    public boolean leave(String nodeId) {
        return joined.leave(nodeId);
    }
}
