package io.butterfly.discovery.admission;

import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.discovery.membership.MembershipStore;
import io.butterfly.common.error.ErrorCode;

/** At most {@code maxMembers} members; a member re-joining keeps its slot. ClusterFull is retryable (docs/bootstrap-protocol.md §8.2). */
public final class ClusterCapacity implements AdmissionCheck {

    private final MembershipStore registry;
    private final int maxMembers;

    public ClusterCapacity(MembershipStore registry, int maxMembers) {
        this.registry = registry;
        this.maxMembers = maxMembers;
    }

    @Override
    public void check(JoinAttempt attempt) {
        if (registry.member(attempt.nodeId()).isEmpty() && registry.size() >= maxMembers) {
            throw new AdmissionException(ErrorCode.CLUSTER_FULL, ErrorKind.RESOURCE_EXHAUSTED,
                    "cluster is full (" + maxMembers + " members)");
        }
    }
}
