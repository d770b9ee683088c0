package io.butterfly.common.discovery;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.retry.Retries;
import io.butterfly.common.error.RetryPolicy;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.MessageType;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.common.v1.SignedEnvelope;
import io.butterfly.proto.discovery.v1.DiscoveryHeartbeat;
import io.butterfly.proto.discovery.v1.DiscoveryRequest;
import io.butterfly.proto.discovery.v1.DiscoveryResponse;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.discovery.v1.JoinAck;
import io.butterfly.proto.discovery.v1.JoinReason;
import io.butterfly.proto.discovery.v1.JoinRequest;
import io.butterfly.proto.discovery.v1.JoinResponse;
import io.butterfly.proto.discovery.v1.LeaveRequest;
import io.butterfly.proto.discovery.v1.Member;
import io.grpc.Channel;
import io.grpc.StatusRuntimeException;
import java.time.Clock;
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A node's side of the join handshake with discovery (docs/bootstrap-protocol.md §3.2): every request is a
 * {@link SignedEnvelope} signed with the node's identity; JOIN_REQUEST → JOIN_RESPONSE → JOIN_ACK, then
 * heartbeats and a leave notification. Refusals the spec calls retryable (docs/bootstrap-protocol.md §8.2), and transport failures
 * while discovery is still starting, are retried with exponential backoff and jitter (Resilience4j's Retry, by
 * {@link Retries}); others end the join.
 */
public final class SignedDiscoveryClient {

    private final Channel channel;
    private final NodeIdentity identity;
    private final String nodeId;
    private final String clusterName;
    private final long features;
    private final Clock clock;
    private final RetryPolicy retry;
    private volatile byte[] discoveryKey;

    public SignedDiscoveryClient(Channel channel, NodeIdentity identity, String nodeId, String clusterName, long features,
                                 Clock clock, RetryPolicy retry) {
        this.channel = channel;
        this.identity = identity;
        this.nodeId = nodeId;
        this.clusterName = clusterName;
        this.features = features;
        this.clock = clock;
        this.retry = retry;
    }

    private DiscoveryServiceGrpc.DiscoveryServiceBlockingStub stub(long seconds) {
        return DiscoveryServiceGrpc.newBlockingStub(channel).withDeadlineAfter(seconds, TimeUnit.SECONDS);
    }

    private SignedEnvelope seal(MessageType type, com.google.protobuf.MessageLite payload) {
        return ControlEnvelopes.seal(identity, type, nodeId, payload, clock.millis());
    }

    /** One JOIN_REQUEST and, once admitted, its JOIN_ACK; throws the server's refusal as a StatusRuntimeException. */
    public JoinResponse joinOnce(Member member, JoinReason reason) {
        JoinRequest request = JoinRequest.newBuilder()
                .setClusterName(clusterName)
                .setMember(member.toBuilder().setNodeId(nodeId).setPublicKey(ByteString.copyFrom(identity.publicKey())))
                .setPublicKey(ByteString.copyFrom(identity.publicKey()))
                .setFeatures(features)
                .setJoinReason(reason)
                .build();
        // Generous deadline: on a busy machine discovery may admit late; a retry after a timeout is harmless
        // (same id, same key: re-admitted), but needless.
        SignedEnvelope answer = stub(10).join(seal(MessageType.JOIN_REQUEST, request));
        JoinResponse response = openResponse(answer);
        if (response.getAckRequired()) {
            stub(5).acknowledgeJoin(seal(MessageType.JOIN_ACK,
                    JoinAck.newBuilder().setNodeId(nodeId).setReadyForAssignment(true).build()));
        }
        return response;
    }

    /**
     * DISCOVERY_REQUEST (docs/bootstrap-protocol.md §3.1): which cluster this is, who coordinates, who the peers are.
     * Throws the server's refusal (rate limit, bad envelope) as a StatusRuntimeException.
     */
    public DiscoveryResponse discover(NodeCapabilities capabilities) {
        DiscoveryRequest request = DiscoveryRequest.newBuilder()
                .setClusterName(clusterName)
                .setCapabilities(capabilities)
                .setPublicKey(ByteString.copyFrom(identity.publicKey()))
                .build();
        SignedEnvelope answer = stub(10).discover(seal(MessageType.DISCOVERY_REQUEST, request));
        DiscoveryResponse response = parse(answer, MessageType.DISCOVERY_RESPONSE, DiscoveryResponse.parser());
        verifyDiscovery(answer, response.getDiscoveryPublicKey().toByteArray());
        return response;
    }

    /** Checks discovery's signature on its join answer and pins discovery's key on first use. */
    private JoinResponse openResponse(SignedEnvelope answer) {
        JoinResponse response = parse(answer, MessageType.JOIN_RESPONSE, JoinResponse.parser());
        verifyDiscovery(answer, response.getDiscoveryPublicKey().toByteArray());
        return response;
    }

    private static <T> T parse(SignedEnvelope answer, MessageType expected, com.google.protobuf.Parser<T> parser) {
        if (answer.getMessageType() != expected) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL,
                    "discovery answered with " + answer.getMessageType() + " where " + expected + " was expected");
        }
        try {
            return parser.parseFrom(answer.getPayload());
        } catch (InvalidProtocolBufferException e) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL,
                    "unreadable " + expected, java.util.Map.of(), e);
        }
    }

    /** The answer is signed by the key it names, and that key is the one discovery used before (pinned). */
    private void verifyDiscovery(SignedEnvelope answer, byte[] key) {
        byte[] pinned = discoveryKey;
        if (pinned != null && !Arrays.equals(pinned, key)) {
            throw new ButterflyException(ErrorCode.INVALID_SIGNATURE, ErrorKind.UNAUTHENTICATED,
                    "discovery's identity key changed since it was first seen");
        }
        if (key.length != 32 || !ControlEnvelopes.verify(answer, key)) {
            throw new ButterflyException(ErrorCode.INVALID_SIGNATURE, ErrorKind.UNAUTHENTICATED,
                    "discovery's " + answer.getMessageType() + " is not validly signed");
        }
        discoveryKey = key;
    }

    /**
     * Joins, retrying retryable refusals with backoff and jitter until admitted. A non-retryable refusal
     * is thrown as a {@link ButterflyException} carrying the server's error code.
     *
     * @param onRetry told the reason of each failed attempt before the wait
     */
    public JoinResponse join(Member member, JoinReason reason, Consumer<String> onRetry) throws InterruptedException {
        int[] failures = {0};
        try {
            return Retries.untilDone("discovery-join", () -> {
                try {
                    return joinOnce(member, reason);
                } catch (StatusRuntimeException e) {
                    ButterflyException refusal = GrpcErrors.fromRemote(e, "join refused");
                    // No ErrorInfo: a transport failure (discovery not up yet), which is transient.
                    boolean transport = GrpcErrors.codeOf(e).isEmpty();
                    if (!transport && !RetryPolicy.retryable(refusal.code())) {
                        throw refusal;
                    }
                    long retryAfter = parseLong(refusal.context().get(RetryPolicy.RETRY_AFTER_MS));
                    long delay = retry.delayMillis(failures[0]++, retryAfter, ThreadLocalRandom.current());
                    onRetry.accept((transport ? "unreachable: " + e.getStatus().getCode()
                            : refusal.code() + ": " + e.getStatus().getDescription()) + "; retrying in " + delay + " ms");
                    throw new Retries.TryAgain(e, delay);
                }
            });
        } catch (StatusRuntimeException interruptedWhileWaiting) {
            if (Thread.interrupted()) {
                throw new InterruptedException("join interrupted while waiting to retry");
            }
            throw interruptedWhileWaiting;
        }
    }

    /** A HEARTBEAT; NOT_FOUND means discovery no longer knows this node (it restarted) and the node should join again. */
    public long heartbeat() {
        return stub(2).heartbeat(seal(MessageType.HEARTBEAT, DiscoveryHeartbeat.newBuilder().setNodeId(nodeId).build()))
                .getLastSeenMs();
    }

    public void leave() {
        stub(1).leave(seal(MessageType.LEAVE_NOTIFICATION, LeaveRequest.newBuilder().setNodeId(nodeId).build()));
    }

    private static long parseLong(String s) {
        try {
            return s == null ? 0 : Long.parseLong(s);
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
