package io.butterfly.discovery.membership;

import io.butterfly.proto.common.v1.ErrorCode;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The embedded membership backend: admission checks and the member table, in memory.
 *
 * <p>A node that joins again from the same address (a restart) replaces its entry; the same id from
 * a different address is a duplicate and is refused, so two processes cannot share an identity.
 */
public class MembershipRegistry {

    private final String clusterName;
    private final int protocolMajor;
    private final int maxMembers;
    private final Map<String, MemberView> members = new ConcurrentHashMap<>();

    public MembershipRegistry(String clusterName, String protocolVersion, int maxMembers) {
        this.clusterName = clusterName;
        this.protocolMajor = ProtocolVersion.parse(protocolVersion).major();
        this.maxMembers = maxMembers;
    }

    public synchronized MemberView join(String requestedCluster, String protocolVersion, MemberView candidate) {
        if (!clusterName.equals(requestedCluster)) {
            throw new AdmissionException(ErrorCode.CLUSTER_NAME_MISMATCH, Status.Code.FAILED_PRECONDITION,
                    "cluster name '" + requestedCluster + "' does not match '" + clusterName + "'");
        }
        ProtocolVersion theirs;
        try {
            theirs = ProtocolVersion.parse(protocolVersion);
        } catch (IllegalArgumentException e) {
            throw new AdmissionException(ErrorCode.INVALID_MESSAGE, Status.Code.INVALID_ARGUMENT, e.getMessage());
        }
        if (theirs.major() != protocolMajor) {
            throw new AdmissionException(ErrorCode.UNSUPPORTED_VERSION, Status.Code.FAILED_PRECONDITION,
                    "protocol major version " + theirs.major() + " is not supported (this cluster speaks " + protocolMajor + ".x)");
        }
        if (candidate.nodeId() == null || candidate.nodeId().isBlank()) {
            throw new AdmissionException(ErrorCode.INVALID_MESSAGE, Status.Code.INVALID_ARGUMENT, "node_id is required");
        }
        MemberView existing = members.get(candidate.nodeId());
        if (existing != null && !(existing.host().equals(candidate.host()) && existing.grpcPort() == candidate.grpcPort())) {
            throw new AdmissionException(ErrorCode.DUPLICATE_NODE_ID, Status.Code.ALREADY_EXISTS,
                    "node id '" + candidate.nodeId() + "' is already a member at " + existing.host() + ":" + existing.grpcPort());
        }
        if (existing == null && members.size() >= maxMembers) {
            throw new AdmissionException(ErrorCode.CLUSTER_FULL, Status.Code.RESOURCE_EXHAUSTED,
                    "cluster is full (" + maxMembers + " members)");
        }
        long joinedAt = existing == null ? candidate.joinedAtMs() : existing.joinedAtMs();
        MemberView admitted = new MemberView(candidate.nodeId(), candidate.role(), candidate.host(), candidate.grpcPort(),
                candidate.httpPort(), candidate.version(), joinedAt, candidate.lastSeenMs(), candidate.capabilities());
        members.put(admitted.nodeId(), admitted);
        return admitted;
    }

    public boolean leave(String nodeId) {
        return members.remove(nodeId) != null;
    }

    /** Members sorted by id; {@code role == null} lists every role. */
    public List<MemberView> members(String role) {
        List<MemberView> out = new ArrayList<>();
        for (MemberView m : members.values()) {
            if (role == null || role.equals(m.role())) {
                out.add(m);
            }
        }
        out.sort(Comparator.comparing(MemberView::nodeId));
        return out;
    }
}
