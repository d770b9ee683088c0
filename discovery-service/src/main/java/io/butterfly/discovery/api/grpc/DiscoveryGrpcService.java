package io.butterfly.discovery.api.grpc;

import com.google.protobuf.ByteString;
import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.CallerInterceptor;
import io.butterfly.discovery.admission.AdmissionChain;
import io.butterfly.discovery.admission.AdmissionPolicy;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipStore;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.MessageType;
import io.butterfly.proto.common.v1.ProtocolVersion;
import io.butterfly.proto.common.v1.SignedEnvelope;
import io.butterfly.proto.discovery.v1.ClusterConfig;
import io.butterfly.proto.discovery.v1.DiscoveryHeartbeat;
import io.butterfly.proto.discovery.v1.DiscoveryHeartbeatResponse;
import io.butterfly.proto.discovery.v1.DiscoveryRequest;
import io.butterfly.proto.discovery.v1.DiscoveryResponse;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.discovery.v1.JoinAck;
import io.butterfly.proto.discovery.v1.JoinAckResponse;
import io.butterfly.proto.discovery.v1.JoinResponse;
import io.butterfly.proto.discovery.v1.LeaveRequest;
import io.butterfly.proto.discovery.v1.LeaveResponse;
import io.butterfly.proto.discovery.v1.ListMembersRequest;
import io.butterfly.proto.discovery.v1.ListMembersResponse;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * gRPC edge of discovery: hands every signed control message to the {@link AdmissionChain} and maps the
 * membership domain to protos. Join responses are signed with discovery's own identity.
 */
public class DiscoveryGrpcService extends DiscoveryServiceGrpc.DiscoveryServiceImplBase {

    private static final Logger log = LoggerFactory.getLogger(DiscoveryGrpcService.class);

    private final AdmissionChain admission;
    private final MembershipStore registry;
    private final NodeIdentity identity;
    private final String nodeId;
    private final String clusterName;

    public DiscoveryGrpcService(AdmissionChain admission, MembershipStore registry, NodeIdentity identity,
                                String nodeId, String clusterName) {
        this.admission = admission;
        this.registry = registry;
        this.identity = identity;
        this.nodeId = nodeId;
        this.clusterName = clusterName;
    }

    /**
     * DISCOVERY_REQUEST (docs/bootstrap-protocol.md §3.1): tells a node which cluster it reached, who coordinates and
     * who the peers are, before it asks to join. A node asking for another cluster learns only that.
     */
    @Override
    public void discover(SignedEnvelope request, StreamObserver<SignedEnvelope> response) {
        fromItsSender(request);
        DiscoveryRequest asked = admission.openDiscovery(ControlMessages.read(request),
                ControlMessages.parsing(DiscoveryRequest.parser()), r -> r.getPublicKey().toByteArray(),
                PeerAddressInterceptor.currentPeerHost());
        AdmissionPolicy policy = admission.policy();
        ProtocolVersion version = ProtocolVersion.newBuilder().setMajor(policy.protocolVersion().major())
                .setMinor(policy.protocolVersion().minor()).build();
        DiscoveryResponse.Builder out = DiscoveryResponse.newBuilder()
                .setDiscoveryPublicKey(ByteString.copyFrom(identity.publicKey()));
        if (!clusterName.equals(asked.getClusterName())) {
            out.setAccepted(false).setRejectionReason("this is cluster '" + clusterName + "', not '"
                    + asked.getClusterName() + "'");
        } else {
            // Only members that joined through discovery: a backend's other entries (a static seed that has
            // not joined, a Consul catalog entry) have no version or identity key to put in a Member.
            List<MemberView> members = registry.members(null).stream().filter(DiscoveryGrpcService::joined).toList();
            out.setAccepted(true)
                    .setClusterConfig(ClusterConfig.newBuilder().setClusterName(clusterName).setProtocolVersion(version)
                            .setFeatures(policy.features()).setRequiredFeatures(policy.requiredFeatures())
                            .setMaxMembers(policy.maxMembers()).setMembers(registry.size()));
            members.stream().filter(m -> "coordinator".equals(m.role())).map(MemberView::nodeId).findFirst()
                    .ifPresent(out::setCoordinatorId);
            members.forEach(m -> out.addPeerList(toProto(m)));
        }
        response.onNext(ControlEnvelopes.seal(identity, version, MessageType.DISCOVERY_RESPONSE, nodeId,
                request.getSender(), out.build(), admission.nowMs()));
        response.onCompleted();
    }

    @Override
    public void join(SignedEnvelope request, StreamObserver<SignedEnvelope> response) {
        AdmissionChain.Admission admitted;
        try {
            admitted = admission.admitJoin(ControlMessages.read(request), ControlMessages.JOIN,
                    PeerAddressInterceptor.currentPeerHost(), CallerInterceptor.current());
        } catch (AdmissionException e) {
            log.info("join of '{}' from {} refused: {} {}", request.getSender(), PeerAddressInterceptor.currentPeerHost(),
                    e.code(), e.getMessage());
            throw e;
        }
        log.info("admitted '{}' ({}) at {}:{}", admitted.member().nodeId(), admitted.member().role(),
                admitted.member().host(), admitted.member().grpcPort());
        JoinResponse.Builder out = JoinResponse.newBuilder()
                .setMember(toProto(admitted.member()))
                .setAgreedVersion(ProtocolVersion.newBuilder().setMajor(admitted.agreement().version().major())
                        .setMinor(admitted.agreement().version().minor()))
                .setAgreedFeatures(admitted.agreement().features().bits())
                .setClusterName(clusterName)
                .setAckRequired(true)
                .setDiscoveryPublicKey(ByteString.copyFrom(identity.publicKey()));
        registry.members(null).stream().filter(DiscoveryGrpcService::joined).forEach(v -> out.addMembers(toProto(v)));
        response.onNext(ControlEnvelopes.seal(identity, out.getAgreedVersion(), MessageType.JOIN_RESPONSE, nodeId,
                request.getSender(), out.build(), admission.nowMs()));
        response.onCompleted();
    }

    @Override
    public void acknowledgeJoin(SignedEnvelope request, StreamObserver<JoinAckResponse> response) {
        fromItsSender(request);
        JoinAck ack = admission.openMemberMessage(ControlMessages.read(request), MessageType.JOIN_ACK.name(),
                ControlMessages.parsing(JoinAck.parser()), JoinAck::getNodeId);
        registry.acknowledge(ack.getNodeId(), admission.nowMs());
        response.onNext(JoinAckResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void leave(SignedEnvelope request, StreamObserver<LeaveResponse> response) {
        fromItsSender(request);
        LeaveRequest leave = admission.openMemberMessage(ControlMessages.read(request),
                MessageType.LEAVE_NOTIFICATION.name(), ControlMessages.parsing(LeaveRequest.parser()), LeaveRequest::getNodeId);
        registry.leave(leave.getNodeId());
        log.info("'{}' left", leave.getNodeId());
        response.onNext(LeaveResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void heartbeat(SignedEnvelope request, StreamObserver<DiscoveryHeartbeatResponse> response) {
        fromItsSender(request);
        DiscoveryHeartbeat beat = admission.openMemberMessage(ControlMessages.read(request), MessageType.HEARTBEAT.name(),
                ControlMessages.parsing(DiscoveryHeartbeat.parser()), DiscoveryHeartbeat::getNodeId);
        if (registry.member(beat.getNodeId()).filter(m -> !m.acknowledged()).isPresent()) {
            // A node heartbeats only after acknowledging a join, so a pending entry is a later join's: one the node
            // gave up on (its deadline passed) that a loaded discovery admitted after the ack. Heartbeats would keep
            // it pending and unlisted for ever (the coordinator never takes it on); joining again lists it.
            throw new AdmissionException(ErrorCode.INVALID_MESSAGE, ErrorKind.NOT_FOUND, "'" + beat.getNodeId()
                    + "' has not acknowledged its latest join; join again");
        }
        MemberView seen = registry.touch(beat.getNodeId(), admission.nowMs()).orElseThrow(() -> new AdmissionException(
                ErrorCode.INVALID_MESSAGE, ErrorKind.NOT_FOUND, "'" + beat.getNodeId() + "' is not a member; join first"));
        response.onNext(DiscoveryHeartbeatResponse.newBuilder().setLastSeenMs(seen.lastSeenMs()).build());
        response.onCompleted();
    }

    /**
     * Over mutual TLS a signed message comes over its sender's own connection: the certificate names the envelope's
     * sender (the signature says the message is the sender's, the certificate that the connection is).
     */
    private static void fromItsSender(SignedEnvelope request) {
        CallerInterceptor.current().requireIs(null, request.getSender(), request.getMessageType().name());
    }

    @Override
    public void listMembers(ListMembersRequest request, StreamObserver<ListMembersResponse> response) {
        String role = request.getRole() == NodeRole.NODE_ROLE_UNSPECIFIED ? null : request.getRole().name().toLowerCase(Locale.ROOT);
        ListMembersResponse.Builder out = ListMembersResponse.newBuilder();
        registry.members(role).stream().filter(DiscoveryGrpcService::joined).forEach(v -> out.addMembers(toProto(v)));
        response.onNext(out.build());
        response.onCompleted();
    }

    /**
     * Nodes list each other only once they joined through discovery: their identity key and capabilities are
     * signed. Entries a backend knows otherwise (a reachable static seed, a Consul registration) show in the
     * REST listing only.
     */
    static boolean joined(MemberView v) {
        return v.acknowledged() && v.publicKeyHex() != null;
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
                .setLastSeenMs(v.lastSeenMs())
                .setPublicKey(ByteString.copyFrom(Ed25519.fromHex(v.publicKeyHex())));
        if (v.capabilities() != null) {
            b.setCapabilities(ControlMessages.toProto(v.capabilities()));
        }
        return b.build();
    }
}
