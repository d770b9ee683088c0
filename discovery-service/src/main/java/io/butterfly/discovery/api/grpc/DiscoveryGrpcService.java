package io.butterfly.discovery.api.grpc;

import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipRegistry;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.discovery.v1.JoinRequest;
import io.butterfly.proto.discovery.v1.JoinResponse;
import io.butterfly.proto.discovery.v1.LeaveRequest;
import io.butterfly.proto.discovery.v1.LeaveResponse;
import io.butterfly.proto.discovery.v1.ListMembersRequest;
import io.butterfly.proto.discovery.v1.ListMembersResponse;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.grpc.stub.StreamObserver;
import java.time.Clock;
import java.util.Locale;
import org.springframework.stereotype.Service;

/** gRPC edge of discovery: maps protos to the membership domain and back. */
@Service
public class DiscoveryGrpcService extends DiscoveryServiceGrpc.DiscoveryServiceImplBase {

    private final MembershipRegistry registry;
    private final Clock clock;

    public DiscoveryGrpcService(MembershipRegistry registry, Clock clock) {
        this.registry = registry;
        this.clock = clock;
    }

    @Override
    public void join(JoinRequest request, StreamObserver<JoinResponse> response) {
        Member m = request.getMember();
        long now = clock.millis();
        MemberView admitted = registry.join(request.getClusterName(), request.getProtocolVersion(),
                new MemberView(m.getNodeId(), roleName(m.getRole()), m.getHost(), m.getGrpcPort(), m.getHttpPort(),
                        m.getVersion(), now, now, m.getCapabilities()));
        JoinResponse.Builder out = JoinResponse.newBuilder().setMember(toProto(admitted));
        registry.members(null).forEach(v -> out.addMembers(toProto(v)));
        response.onNext(out.build());
        response.onCompleted();
    }

    @Override
    public void leave(LeaveRequest request, StreamObserver<LeaveResponse> response) {
        registry.leave(request.getNodeId());
        response.onNext(LeaveResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void listMembers(ListMembersRequest request, StreamObserver<ListMembersResponse> response) {
        String role = request.getRole() == NodeRole.NODE_ROLE_UNSPECIFIED ? null : roleName(request.getRole());
        ListMembersResponse.Builder out = ListMembersResponse.newBuilder();
        registry.members(role).forEach(v -> out.addMembers(toProto(v)));
        response.onNext(out.build());
        response.onCompleted();
    }

    static String roleName(NodeRole role) {
        if (role == NodeRole.NODE_ROLE_UNSPECIFIED || role == NodeRole.UNRECOGNIZED) {
            throw new IllegalArgumentException("member.role is required");
        }
        return role.name().toLowerCase(Locale.ROOT);
    }

    static Member toProto(MemberView v) {
        Member.Builder b = Member.newBuilder()
                .setNodeId(v.nodeId())
                .setRole(NodeRole.valueOf(v.role().toUpperCase(Locale.ROOT)))
                .setHost(v.host())
                .setGrpcPort(v.grpcPort())
                .setHttpPort(v.httpPort())
                .setVersion(v.version())
                .setJoinedAtMs(v.joinedAtMs())
                .setLastSeenMs(v.lastSeenMs());
        if (v.capabilities() instanceof NodeCapabilities caps) {
            b.setCapabilities(caps);
        }
        return b.build();
    }
}
