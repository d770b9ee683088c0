package io.butterfly.discovery.api.grpc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import com.google.rpc.ErrorInfo;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.discovery.SignedDiscoveryClient;
import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.error.RetryPolicy;
import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.discovery.admission.AdmissionChain;
import io.butterfly.discovery.admission.AdmissionPolicy;
import io.butterfly.discovery.admission.ProtocolFeatures;
import io.butterfly.discovery.membership.MembershipRegistry;
import io.butterfly.discovery.membership.ProtocolVersion;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.MessageType;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.common.v1.SignedEnvelope;
import io.butterfly.proto.discovery.v1.DiscoveryHeartbeat;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.discovery.v1.JoinAck;
import io.butterfly.proto.discovery.v1.JoinReason;
import io.butterfly.proto.discovery.v1.JoinRequest;
import io.butterfly.proto.discovery.v1.JoinResponse;
import io.butterfly.proto.discovery.v1.ListMembersRequest;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.grpc.server.exception.GrpcExceptionHandlerInterceptor;

/**
 * Every admission refusal, each asserted by its docs/bootstrap-protocol.md §8.1 error code in the gRPC error
 * details, against the real discovery gRPC service (in-process transport, the same interceptors and
 * exception handler as the running service), plus the honest join/ack/heartbeat/leave path.
 */
class DiscoveryAdmissionGrpcTest {

    private static final String CLUSTER = "butterfly";
    private final Random random = new Random(20261123L);
    private Server server;
    private ManagedChannel channel;
    private MembershipRegistry registry;

    private AdmissionPolicy policy(UnaryOperator<AdmissionPolicyBuilder> tweak) {
        return tweak.apply(new AdmissionPolicyBuilder()).build();
    }

    /** Mutable defaults: TOFU on, room for 16, generous rate limit, ±5 min window. */
    static final class AdmissionPolicyBuilder {
        int maxMembers = 16;
        Map<String, String> trusted = Map.of();
        boolean tofu = true;
        int burst = 1000;
        double perSecond = 1000;
        long requiredFeatures = 0;

        AdmissionPolicy build() {
            return new AdmissionPolicy("discovery-0", CLUSTER, new ProtocolVersion(1, 0), ProtocolFeatures.COMPRESSION,
                    requiredFeatures, maxMembers, trusted, tofu, Duration.ofMinutes(5), burst, perSecond);
        }
    }

    private DiscoveryServiceGrpc.DiscoveryServiceBlockingStub start(AdmissionPolicy policy) throws Exception {
        registry = new MembershipRegistry();
        return start(policy, registry);
    }

    private DiscoveryServiceGrpc.DiscoveryServiceBlockingStub start(AdmissionPolicy policy,
                                                                   io.butterfly.discovery.membership.MembershipStore store) throws Exception {
        AdmissionChain chain = new AdmissionChain(policy, store, Clock.systemUTC());
        DiscoveryGrpcService service = new DiscoveryGrpcService(chain, store, NodeIdentity.ephemeral(), "discovery-0", CLUSTER);
        String name = "discovery-" + random.nextLong();
        server = InProcessServerBuilder.forName(name).directExecutor()
                .addService(ServerInterceptors.intercept(service,
                        new GrpcExceptionHandlerInterceptor(new ButterflyGrpcExceptionHandler()), new PeerAddressInterceptor()))
                .build().start();
        channel = InProcessChannelBuilder.forName(name).directExecutor().build();
        return DiscoveryServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() throws InterruptedException {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
        }
        if (server != null) {
            server.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
        }
    }

    /** A plausible worker whose numbers come from the seeded generator. */
    private NodeCapabilities capabilities() {
        long memory = (2L + random.nextInt(62)) << 30;
        return NodeCapabilities.newBuilder()
                .setCpuCores(1 + random.nextInt(64))
                .setMemoryBytes(memory)
                .setMaxModelBytes(memory / 2)
                .setMeasuredGflops(1 + random.nextDouble() * 500)
                .setMemoryBandwidthGbps(1 + random.nextDouble() * 100)
                .setDevice("cpu()")
                .build();
    }

    private JoinRequest joinRequest(String nodeId, NodeIdentity identity) {
        return JoinRequest.newBuilder()
                .setClusterName(CLUSTER)
                .setMember(Member.newBuilder().setNodeId(nodeId).setRole(NodeRole.WORKER).setHost("127.0.0.1")
                        .setGrpcPort(9000 + random.nextInt(1000)).setHttpPort(8000).setVersion("test")
                        .setCapabilities(capabilities()))
                .setPublicKey(ByteString.copyFrom(identity.publicKey()))
                .setFeatures(ProtocolFeatures.COMPRESSION)
                .setJoinReason(JoinReason.INITIAL_START)
                .build();
    }

    private static SignedEnvelope seal(NodeIdentity identity, String sender, JoinRequest request) {
        return ControlEnvelopes.seal(identity, MessageType.JOIN_REQUEST, sender, request, System.currentTimeMillis());
    }

    private static ErrorInfo refusal(Runnable call, ErrorCode expected, Status.Code status) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call::run);
        assertEquals(expected, GrpcErrors.codeOf(e).orElseThrow(), () -> "refused with " + e.getStatus());
        assertEquals(status, e.getStatus().getCode());
        assertTrue(e.getStatus().getDescription() != null && !e.getStatus().getDescription().isBlank());
        return GrpcErrors.errorInfo(e).orElseThrow();
    }

    @Test
    void honestNodeJoinsAcknowledgesHeartbeatsAndLeaves() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity id = NodeIdentity.ephemeral();
        SignedEnvelope answer = stub.join(seal(id, "worker-0", joinRequest("worker-0", id)));

        assertEquals(MessageType.JOIN_RESPONSE, answer.getMessageType());
        JoinResponse response = JoinResponse.parseFrom(answer.getPayload());
        assertTrue(ControlEnvelopes.verify(answer, response.getDiscoveryPublicKey().toByteArray()), "discovery signs its answer");
        assertEquals(1, response.getAgreedVersion().getMajor());
        assertEquals(ProtocolFeatures.COMPRESSION, response.getAgreedFeatures());
        assertArrayEquals(id.publicKey(), response.getMember().getPublicKey().toByteArray());
        assertEquals(0, stub.listMembers(ListMembersRequest.getDefaultInstance()).getMembersCount(), "listed only after JOIN_ACK");

        stub.acknowledgeJoin(ControlEnvelopes.seal(id, MessageType.JOIN_ACK, "worker-0",
                JoinAck.newBuilder().setNodeId("worker-0").setReadyForAssignment(true).build(), System.currentTimeMillis()));
        assertEquals("worker-0", stub.listMembers(ListMembersRequest.getDefaultInstance()).getMembers(0).getNodeId());

        SignedEnvelope beat = ControlEnvelopes.seal(id, MessageType.HEARTBEAT, "worker-0",
                DiscoveryHeartbeat.newBuilder().setNodeId("worker-0").build(), System.currentTimeMillis());
        assertTrue(stub.heartbeat(beat).getLastSeenMs() > 0);
        refusal(() -> stub.heartbeat(beat), ErrorCode.INVALID_MESSAGE, Status.Code.ALREADY_EXISTS); // replayed heartbeat

        // Another key cannot speak for worker-0, not even to make it leave.
        NodeIdentity other = NodeIdentity.ephemeral();
        refusal(() -> stub.leave(ControlEnvelopes.seal(other, MessageType.LEAVE_NOTIFICATION, "worker-0",
                        io.butterfly.proto.discovery.v1.LeaveRequest.newBuilder().setNodeId("worker-0").build(), System.currentTimeMillis())),
                ErrorCode.INVALID_SIGNATURE, Status.Code.UNAUTHENTICATED);
        stub.leave(ControlEnvelopes.seal(id, MessageType.LEAVE_NOTIFICATION, "worker-0",
                io.butterfly.proto.discovery.v1.LeaveRequest.newBuilder().setNodeId("worker-0").build(), System.currentTimeMillis()));
        assertEquals(0, stub.listMembers(ListMembersRequest.getDefaultInstance()).getMembersCount());
        refusal(() -> stub.heartbeat(ControlEnvelopes.seal(id, MessageType.HEARTBEAT, "worker-0",
                        DiscoveryHeartbeat.newBuilder().setNodeId("worker-0").build(), System.currentTimeMillis())),
                ErrorCode.INVALID_MESSAGE, Status.Code.NOT_FOUND);
    }

    @Test
    void unsignedJoinIsRefused() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity id = NodeIdentity.ephemeral();
        SignedEnvelope unsigned = seal(id, "worker-0", joinRequest("worker-0", id)).toBuilder().clearSignature().build();
        ErrorInfo info = refusal(() -> stub.join(unsigned), ErrorCode.INVALID_SIGNATURE, Status.Code.UNAUTHENTICATED);
        assertEquals("unsigned", info.getMetadataOrThrow("check"));
        assertEquals("0x1003", info.getMetadataOrThrow("code"));
    }

    @Test
    void forgedSignatureIsRefused() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity victim = NodeIdentity.ephemeral();
        NodeIdentity forger = NodeIdentity.ephemeral();
        // Presents the victim's key but signs with its own.
        SignedEnvelope forged = seal(forger, "worker-0", joinRequest("worker-0", victim));
        assertEquals("signature", refusal(() -> stub.join(forged), ErrorCode.INVALID_SIGNATURE, Status.Code.UNAUTHENTICATED)
                .getMetadataOrThrow("check"));
        // A validly signed envelope whose payload was altered afterwards.
        SignedEnvelope honest = seal(victim, "worker-0", joinRequest("worker-0", victim));
        JoinRequest altered = JoinRequest.newBuilder(JoinRequest.parseFrom(honest.getPayload())).setClusterName(CLUSTER + "-x").build();
        SignedEnvelope tampered = honest.toBuilder().setPayload(altered.toByteString()).build();
        refusal(() -> stub.join(tampered), ErrorCode.INVALID_SIGNATURE, Status.Code.UNAUTHENTICATED);
    }

    @Test
    void keyOutsideTheTrustStoreIsRefusedWithoutTrustOnFirstUse() throws Exception {
        NodeIdentity trusted = NodeIdentity.ephemeral();
        var stub = start(policy(b -> {
            b.tofu = false;
            b.trusted = Map.of("worker-0", trusted.publicKeyHex());
            return b;
        }));
        NodeIdentity stranger = NodeIdentity.ephemeral();
        assertEquals("untrusted_key", refusal(() -> stub.join(seal(stranger, "worker-1", joinRequest("worker-1", stranger))),
                ErrorCode.INVALID_SIGNATURE, Status.Code.PERMISSION_DENIED).getMetadataOrThrow("check"));
        refusal(() -> stub.join(seal(stranger, "worker-0", joinRequest("worker-0", stranger))),
                ErrorCode.INVALID_SIGNATURE, Status.Code.PERMISSION_DENIED);
        stub.join(seal(trusted, "worker-0", joinRequest("worker-0", trusted))); // the trust store's key is admitted
    }

    @Test
    void wrongClusterIsRefused() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity id = NodeIdentity.ephemeral();
        JoinRequest request = joinRequest("worker-0", id).toBuilder().setClusterName("other-cluster").build();
        refusal(() -> stub.join(seal(id, "worker-0", request)), ErrorCode.CLUSTER_NAME_MISMATCH, Status.Code.FAILED_PRECONDITION);
    }

    @Test
    void incompatibleMajorVersionIsRefused() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity id = NodeIdentity.ephemeral();
        SignedEnvelope v2 = ControlEnvelopes.seal(id, io.butterfly.proto.common.v1.ProtocolVersion.newBuilder().setMajor(2).build(),
                MessageType.JOIN_REQUEST, "worker-0", "", joinRequest("worker-0", id), System.currentTimeMillis());
        refusal(() -> stub.join(v2), ErrorCode.UNSUPPORTED_VERSION, Status.Code.FAILED_PRECONDITION);
        // Same major, newer minor: admitted, speaking the lower minor.
        SignedEnvelope v1dot7 = ControlEnvelopes.seal(id, io.butterfly.proto.common.v1.ProtocolVersion.newBuilder().setMajor(1).setMinor(7).build(),
                MessageType.JOIN_REQUEST, "worker-0", "", joinRequest("worker-0", id), System.currentTimeMillis());
        assertEquals(0, JoinResponse.parseFrom(stub.join(v1dot7).getPayload()).getAgreedVersion().getMinor());
    }

    @Test
    void missingRequiredFeatureIsRefused() throws Exception {
        var stub = start(policy(b -> {
            b.requiredFeatures = ProtocolFeatures.ENCRYPTION;
            return b;
        }));
        NodeIdentity id = NodeIdentity.ephemeral();
        refusal(() -> stub.join(seal(id, "worker-0", joinRequest("worker-0", id))), ErrorCode.UNSUPPORTED_VERSION,
                Status.Code.FAILED_PRECONDITION);
    }

    @Test
    void implausibleCapabilitiesAreRefused() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity id = NodeIdentity.ephemeral();
        JoinRequest honest = joinRequest("worker-0", id);
        NodeCapabilities caps = honest.getMember().getCapabilities();
        NodeCapabilities[] implausible = {
                caps.toBuilder().setCpuCores(0).build(),
                caps.toBuilder().setCpuCores(4096).build(),
                caps.toBuilder().setMemoryBytes(1L << 20).build(),
                caps.toBuilder().setMemoryBytes(Long.MAX_VALUE).build(),
                caps.toBuilder().setMeasuredGflops(1e9).build(),
                caps.toBuilder().setMeasuredGflops(0).build(),
                caps.toBuilder().setMeasuredGflops(Double.NaN).build(),
                caps.toBuilder().setMaxModelBytes(caps.getMemoryBytes() * 10).build(),
                caps.toBuilder().setMemoryBandwidthGbps(1e6).build(),
        };
        for (NodeCapabilities bad : implausible) {
            JoinRequest request = honest.toBuilder().setMember(honest.getMember().toBuilder().setCapabilities(bad)).build();
            refusal(() -> stub.join(seal(id, "worker-0", request)), ErrorCode.INSUFFICIENT_CAPABILITIES, Status.Code.INVALID_ARGUMENT);
        }
        stub.join(seal(id, "worker-0", honest));
    }

    @Test
    void aJoinWhoseAddressCannotBeDialledIsRefused() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity id = NodeIdentity.ephemeral();
        JoinRequest honest = joinRequest("worker-0", id);
        // Listed, each made the coordinator's channel builder throw while it assigned partitions to every worker.
        List<UnaryOperator<Member.Builder>> undiallable = List.of(
                m -> m.setHost(""),
                m -> m.setHost("10.0.0.1 evil"),
                m -> m.setGrpcPort(0),
                m -> m.setGrpcPort(70000),
                m -> m.setGrpcPort(-1),
                m -> m.setHttpPort(70000));
        for (UnaryOperator<Member.Builder> breakIt : undiallable) {
            JoinRequest request = honest.toBuilder().setMember(breakIt.apply(honest.getMember().toBuilder())).build();
            refusal(() -> stub.join(seal(id, "worker-0", request)), ErrorCode.INVALID_MESSAGE, Status.Code.INVALID_ARGUMENT);
        }
        assertEquals(0, registry.size());
        stub.join(seal(id, "worker-0", honest));
    }

    @Test
    void sameIdWithAnotherKeyIsADuplicate() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity first = NodeIdentity.ephemeral();
        stub.join(seal(first, "worker-0", joinRequest("worker-0", first)));
        NodeIdentity second = NodeIdentity.ephemeral();
        refusal(() -> stub.join(seal(second, "worker-0", joinRequest("worker-0", second))),
                ErrorCode.DUPLICATE_NODE_ID, Status.Code.ALREADY_EXISTS);
        // The first node restarting on another port (same key) is not a duplicate.
        stub.join(seal(first, "worker-0", joinRequest("worker-0", first)));
        // The id stays pinned to its first key after a leave (trust on first use).
        registry.leave("worker-0");
        refusal(() -> stub.join(seal(second, "worker-0", joinRequest("worker-0", second))),
                ErrorCode.DUPLICATE_NODE_ID, Status.Code.ALREADY_EXISTS);
    }

    @Test
    void fullClusterRefusesNewcomersButNotReturningMembers() throws Exception {
        var stub = start(policy(b -> {
            b.maxMembers = 2;
            return b;
        }));
        NodeIdentity[] ids = {NodeIdentity.ephemeral(), NodeIdentity.ephemeral(), NodeIdentity.ephemeral()};
        stub.join(seal(ids[0], "worker-0", joinRequest("worker-0", ids[0])));
        stub.join(seal(ids[1], "worker-1", joinRequest("worker-1", ids[1])));
        refusal(() -> stub.join(seal(ids[2], "worker-2", joinRequest("worker-2", ids[2]))), ErrorCode.CLUSTER_FULL,
                Status.Code.RESOURCE_EXHAUSTED);
        stub.join(seal(ids[1], "worker-1", joinRequest("worker-1", ids[1])));
    }

    @Test
    void joinFloodFromOneAddressIsRateLimited() throws Exception {
        var stub = start(policy(b -> {
            b.burst = 3;
            b.perSecond = 0.5;
            return b;
        }));
        for (int i = 0; i < 3; i++) {
            NodeIdentity id = NodeIdentity.ephemeral();
            stub.join(seal(id, "worker-" + i, joinRequest("worker-" + i, id)));
        }
        NodeIdentity id = NodeIdentity.ephemeral();
        ErrorInfo info = refusal(() -> stub.join(seal(id, "worker-3", joinRequest("worker-3", id))),
                ErrorCode.JOIN_RATE_LIMITED, Status.Code.RESOURCE_EXHAUSTED);
        long retryAfter = Long.parseLong(info.getMetadataOrThrow(RetryPolicy.RETRY_AFTER_MS));
        assertTrue(retryAfter > 0 && retryAfter <= 2000, "retry_after_ms " + retryAfter);
    }

    @Test
    void replayedMessageIdIsRefused() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity id = NodeIdentity.ephemeral();
        SignedEnvelope join = seal(id, "worker-0", joinRequest("worker-0", id));
        stub.join(join);
        assertEquals("message_id_replay", refusal(() -> stub.join(join), ErrorCode.INVALID_MESSAGE, Status.Code.ALREADY_EXISTS)
                .getMetadataOrThrow("check"));
    }

    @Test
    void staleOrFutureTimestampIsRefused() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity id = NodeIdentity.ephemeral();
        long now = System.currentTimeMillis();
        for (long skew : new long[] {-Duration.ofMinutes(6).toMillis(), Duration.ofMinutes(6).toMillis()}) {
            SignedEnvelope stale = ControlEnvelopes.seal(id, ControlEnvelopes.CURRENT_VERSION, MessageType.JOIN_REQUEST,
                    "worker-0", "", joinRequest("worker-0", id), now + skew);
            assertEquals("timestamp_window", refusal(() -> stub.join(stale), ErrorCode.INVALID_MESSAGE, Status.Code.INVALID_ARGUMENT)
                    .getMetadataOrThrow("check"));
        }
        stub.join(ControlEnvelopes.seal(id, ControlEnvelopes.CURRENT_VERSION, MessageType.JOIN_REQUEST,
                "worker-0", "", joinRequest("worker-0", id), now - Duration.ofMinutes(4).toMillis()));
    }

    @Test
    void clientRetriesRateLimitedJoinsButNotPermanentRefusals() throws Exception {
        start(policy(b -> {
            b.burst = 1;
            b.perSecond = 2;
            return b;
        }));
        RetryPolicy fast = new RetryPolicy(10, 200);
        Member self = Member.newBuilder().setRole(NodeRole.WORKER).setHost("127.0.0.1").setGrpcPort(9999).setVersion("test")
                .setCapabilities(capabilities()).build();
        NodeIdentity a = NodeIdentity.ephemeral();
        new SignedDiscoveryClient(channel, a, "worker-a", CLUSTER, 0, Clock.systemUTC(), fast).join(self, JoinReason.INITIAL_START, r -> { });
        int[] retries = {0};
        NodeIdentity b = NodeIdentity.ephemeral();
        SignedDiscoveryClient client = new SignedDiscoveryClient(channel, b, "worker-b", CLUSTER, 0, Clock.systemUTC(), fast);
        client.join(self, JoinReason.INITIAL_START, r -> retries[0]++); // the bucket is empty: first attempt is limited
        assertTrue(retries[0] >= 1, "rate-limited join was retried");
        assertEquals(2, registry.members(null).size(), "both joined and acknowledged");
        assertTrue(client.heartbeat() > 0);

        Thread.sleep(600); // let a token come back
        SignedDiscoveryClient wrongCluster = new SignedDiscoveryClient(channel, NodeIdentity.ephemeral(), "worker-c", "elsewhere",
                0, Clock.systemUTC(), fast);
        ButterflyException e = assertThrows(ButterflyException.class,
                () -> wrongCluster.join(self, JoinReason.INITIAL_START, r -> { throw new AssertionError("retried: " + r); }));
        assertEquals(ErrorCode.CLUSTER_NAME_MISMATCH, e.code());
    }

    /**
     * Seen in the soak on the loaded machine: a worker's first join passed its deadline, its retry was admitted and
     * acknowledged, and then discovery answered the first attempt after all, leaving the member pending. Its heartbeats
     * were accepted, so it was never listed again and the coordinator never took it on as a spare (the cluster never
     * had every worker back). Now a pending member's heartbeat is answered NOT_FOUND and the node joins again.
     */
    @Test
    void aJoinAdmittedAfterTheNodesAcknowledgementMakesItJoinAgain() throws Exception {
        start(policy(b -> b));
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("late-join");
        Member self = Member.newBuilder().setNodeId("worker-7").setRole(NodeRole.WORKER).setHost("127.0.0.1")
                .setGrpcPort(9007).setHttpPort(8007).setVersion("test").setCapabilities(capabilities()).build();
        io.butterfly.common.discovery.DiscoveryMembership membership = new io.butterfly.common.discovery.DiscoveryMembership(
                channel, dir, "worker-7", CLUSTER, ProtocolFeatures.COMPRESSION, 50, () -> self, new RetryPolicy(50, 200));
        membership.start();
        try {
            awaitListed("worker-7");
            // The attempt the node gave up on, admitted late: the same node, key and request, a message of its own.
            NodeIdentity identity = NodeIdentity.loadOrCreate(dir);
            JoinRequest late = JoinRequest.newBuilder().setClusterName(CLUSTER).setMember(self)
                    .setPublicKey(ByteString.copyFrom(identity.publicKey())).setFeatures(ProtocolFeatures.COMPRESSION)
                    .setJoinReason(JoinReason.INITIAL_START).build();
            DiscoveryServiceGrpc.newBlockingStub(channel).join(seal(identity, "worker-7", late)); // pending again
            awaitListed("worker-7"); // its next heartbeat is refused, it joins and acknowledges again
            assertTrue(membership.joined());
        } finally {
            membership.stop();
        }
    }

    private void awaitListed(String nodeId) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (DiscoveryServiceGrpc.newBlockingStub(channel).listMembers(ListMembersRequest.getDefaultInstance()).getMembersList().stream()
                .noneMatch(m -> m.getNodeId().equals(nodeId))) {
            assertTrue(System.nanoTime() < deadline, nodeId + " not listed within 30 s");
            Thread.sleep(20);
        }
    }

    // DISCOVERY_REQUEST (docs/bootstrap-protocol.md §3.1)

    private static SignedEnvelope discoveryRequest(NodeIdentity signer, NodeIdentity claimed, String cluster) {
        return ControlEnvelopes.seal(signer, MessageType.DISCOVERY_REQUEST, "worker-9",
                io.butterfly.proto.discovery.v1.DiscoveryRequest.newBuilder().setClusterName(cluster)
                        .setPublicKey(ByteString.copyFrom(claimed.publicKey())).build(),
                System.currentTimeMillis());
    }

    @Test
    void discoveryShowsTheClusterItsCoordinatorAndPeersBeforeJoining() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity coordinator = NodeIdentity.ephemeral();
        JoinRequest asCoordinator = joinRequest("coordinator-0", coordinator).toBuilder()
                .setMember(joinRequest("coordinator-0", coordinator).getMember().toBuilder().setRole(NodeRole.COORDINATOR))
                .build();
        stub.join(seal(coordinator, "coordinator-0", asCoordinator));
        stub.acknowledgeJoin(ControlEnvelopes.seal(coordinator, MessageType.JOIN_ACK, "coordinator-0",
                JoinAck.newBuilder().setNodeId("coordinator-0").build(), System.currentTimeMillis()));

        SignedDiscoveryClient newcomer = new SignedDiscoveryClient(channel, NodeIdentity.ephemeral(), "worker-9", CLUSTER,
                ProtocolFeatures.COMPRESSION, Clock.systemUTC(), new RetryPolicy(10, 100));
        io.butterfly.proto.discovery.v1.DiscoveryResponse seen = newcomer.discover(capabilities());
        assertTrue(seen.getAccepted());
        assertEquals("coordinator-0", seen.getCoordinatorId());
        assertEquals("coordinator-0", seen.getPeerList(0).getNodeId());
        assertEquals(CLUSTER, seen.getClusterConfig().getClusterName());
        assertEquals(16, seen.getClusterConfig().getMaxMembers());
        assertEquals(1, seen.getClusterConfig().getProtocolVersion().getMajor());
        // Discovering is not joining: the newcomer is not a member.
        assertEquals(1, stub.listMembers(ListMembersRequest.getDefaultInstance()).getMembersCount());
    }

    @Test
    void aReachableStaticSeedThatHasNotJoinedIsNotOfferedAsAPeer() throws Exception {
        registry = new MembershipRegistry();
        var seeds = new io.butterfly.discovery.membership.StaticMembershipStore(registry,
                List.of(io.butterfly.discovery.membership.StaticSeed.parse("worker-0=10.0.0.1:9090")), seed -> true,
                Duration.ofSeconds(2), Clock.systemUTC());
        start(policy(b -> b), seeds);
        SignedDiscoveryClient newcomer = new SignedDiscoveryClient(channel, NodeIdentity.ephemeral(), "worker-9", CLUSTER,
                ProtocolFeatures.COMPRESSION, Clock.systemUTC(), new RetryPolicy(10, 100));
        // The seed has no version or identity key yet: listing it as a peer failed every discovery (INTERNAL).
        io.butterfly.proto.discovery.v1.DiscoveryResponse seen = newcomer.discover(capabilities());
        assertTrue(seen.getAccepted());
        assertEquals(0, seen.getPeerListCount());
    }

    @Test
    void discoveryOfAnotherClusterSaysSoAndSharesNothing() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity id = NodeIdentity.ephemeral();
        SignedEnvelope answer = stub.discover(discoveryRequest(id, id, "someone-else"));
        assertEquals(MessageType.DISCOVERY_RESPONSE, answer.getMessageType());
        var seen = io.butterfly.proto.discovery.v1.DiscoveryResponse.parseFrom(answer.getPayload());
        assertTrue(ControlEnvelopes.verify(answer, seen.getDiscoveryPublicKey().toByteArray()), "discovery signs its answer");
        assertTrue(!seen.getAccepted() && seen.getRejectionReason().contains("someone-else")
                && seen.getRejectionReason().contains(CLUSTER), seen.getRejectionReason());
        assertEquals(0, seen.getPeerListCount());
        assertTrue(!seen.hasClusterConfig());
    }

    @Test
    void forgedOrReplayedDiscoveryRequestsAreRefused() throws Exception {
        var stub = start(policy(b -> b));
        NodeIdentity claimed = NodeIdentity.ephemeral();
        refusal(() -> stub.discover(discoveryRequest(NodeIdentity.ephemeral(), claimed, CLUSTER)),
                ErrorCode.INVALID_SIGNATURE, Status.Code.UNAUTHENTICATED);
        SignedEnvelope honest = discoveryRequest(claimed, claimed, CLUSTER);
        stub.discover(honest);
        refusal(() -> stub.discover(honest), ErrorCode.INVALID_MESSAGE, Status.Code.ALREADY_EXISTS);
    }
}
