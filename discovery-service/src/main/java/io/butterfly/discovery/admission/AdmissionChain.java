package io.butterfly.discovery.admission;

import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.identity.Caller;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipStore;
import java.time.Clock;
import java.util.List;
import java.util.function.Function;

/**
 * Every control message discovery accepts passes here, and only here.
 *
 * <p>Joins run the checks in a fixed order, cheapest and least trusting first: the per-address rate
 * limit (before any cryptography, so a flood costs little), envelope format, the caller's certificate (over mutual
 * TLS a node joins as the node and role it names), timestamp window, signature,
 * message-id replay (only authentic messages are remembered), key trust, cluster name, protocol version
 * and features, capability plausibility, duplicate id and capacity. The first refusal ends the attempt.
 * An admitted join is recorded and its key pinned atomically with the checks that read the member table.
 *
 * <p>Later messages from a member (JOIN_ACK, LEAVE, HEARTBEAT) must be fresh, signed by the key the
 * member joined with, unseen, and speak only for their sender.
 */
public final class AdmissionChain {

    /** An admitted join: the recorded member and the agreed protocol. */
    public record Admission(MemberView member, VersionNegotiation.Agreement agreement) {
    }

    private final EnvelopeFormat format;
    private final JoinRateLimit rateLimit;
    private final TimestampWindow timestampWindow;
    private final SignatureCheck signature = new SignatureCheck();
    private final MessageIdReplayGuard replay;
    private final KeyTrust trust;
    private final ProtocolCompatibility protocol;
    private final List<AdmissionCheck> joinChecks;
    private final MembershipStore registry;
    private final Clock clock;
    private final AdmissionPolicy policy;

    public AdmissionChain(AdmissionPolicy policy, MembershipStore registry, Clock clock) {
        this(policy, registry, clock, SeenMessageIds.inMemory());
    }

    /** @param seenIds the accepted message ids, shared by the replicas that share {@code registry} */
    public AdmissionChain(AdmissionPolicy policy, MembershipStore registry, Clock clock, SeenMessageIds seenIds) {
        this.policy = policy;
        this.format = new EnvelopeFormat(policy.nodeId());
        this.rateLimit = new JoinRateLimit(policy.joinBurst(), policy.joinsPerSecond());
        this.timestampWindow = new TimestampWindow(policy.replayWindow());
        this.replay = new MessageIdReplayGuard(timestampWindow.windowMs(), seenIds);
        this.trust = new KeyTrust(policy.trustedKeys(), policy.trustOnFirstUse());
        this.protocol = new ProtocolCompatibility(
                new VersionNegotiation(policy.protocolVersion(), new ProtocolFeatures(policy.features())), policy.requiredFeatures());
        this.registry = registry;
        this.clock = clock;
        this.joinChecks = List.of(new CertifiedJoin(), timestampWindow, signature, replay, trust, new ClusterNameCheck(policy.clusterName()),
                protocol, new CapabilityPlausibility(), new DuplicateNodeId(registry, trust),
                new ClusterCapacity(registry, policy.maxMembers()));
    }

    /** Judges a JOIN_REQUEST from {@code caller}; returns the admitted member or throws the first refusal. */
    public Admission admitJoin(SignedMessage message, PayloadReader<Join> reader, String sourceAddress, Caller caller) {
        long now = clock.millis();
        rateLimit.check(sourceAddress, now);
        Join request = format.open(message, "JOIN_REQUEST", reader);
        Candidate m = request.member();
        if (m.nodeId().isBlank()) {
            throw EnvelopeFormat.invalid("member.node_id is required");
        }
        if (!m.nodeId().equals(message.sender())) {
            throw EnvelopeFormat.invalid("envelope sender '" + message.sender() + "' joins as '" + m.nodeId() + "'");
        }
        if (m.role() == null) {
            throw EnvelopeFormat.invalid("member.role is required");
        }
        requireDiallable(m);
        JoinAttempt attempt = new JoinAttempt(message, request, sourceAddress, now, caller);
        synchronized (this) {
            for (AdmissionCheck check : joinChecks) {
                check.check(attempt);
            }
            String key = Ed25519.hex(request.publicKey());
            MemberView admitted = registry.admit(new MemberView(m.nodeId(), m.role(), m.host(), m.grpcPort(),
                    m.httpPort(), m.version(), now, now, m.capabilities(), key, false));
            trust.pin(m.nodeId(), key);
            return new Admission(admitted, protocol.agree(attempt));
        }
    }

    /**
     * Other nodes dial the address a member joins with: one they cannot dial (a blank host, a port outside
     * 1..65535) is refused here, where the joiner hears why, not when a coordinator's channel builder throws
     * on it while assigning partitions to every worker.
     */
    private static void requireDiallable(Candidate m) {
        if (m.host().isBlank() || m.host().chars().anyMatch(Character::isWhitespace)) {
            throw EnvelopeFormat.invalid("member.host must be a host name or address, got '" + m.host() + "'");
        }
        if (m.grpcPort() < 1 || m.grpcPort() > 65535) {
            throw EnvelopeFormat.invalid("member.grpc_port must be 1..65535, got " + m.grpcPort());
        }
        if (m.httpPort() < 0 || m.httpPort() > 65535) {
            throw EnvelopeFormat.invalid("member.http_port must be 0..65535, got " + m.httpPort());
        }
    }

    /**
     * Opens a DISCOVERY_REQUEST from a node that need not be a member yet: rate-limited like joins, fresh,
     * signed by the key it carries, not a replay. Nothing is granted by it, so no trust check applies.
     */
    public <T> T openDiscovery(SignedMessage message, PayloadReader<T> reader, Function<T, byte[]> publicKey,
                               String sourceAddress) {
        long now = clock.millis();
        rateLimit.check(sourceAddress, now);
        T request = format.open(message, "DISCOVERY_REQUEST", reader);
        timestampWindow.check(message, now);
        byte[] key = publicKey.apply(request);
        if (key.length != Ed25519.PUBLIC_KEY_BYTES) {
            throw EnvelopeFormat.invalid("public_key must be a raw 32-byte Ed25519 key, got " + key.length + " bytes");
        }
        signature.verify(message, key);
        replay.check(message, now);
        return request;
    }

    /**
     * Opens a member's later message: fresh, signed by the member's key, not a replay, and about its sender.
     * A sender that is not a member is NOT_FOUND (after a discovery restart it simply joins again).
     */
    public <T> T openMemberMessage(SignedMessage message, String type, PayloadReader<T> reader,
                                   Function<T, String> subject) {
        long now = clock.millis();
        T payload = format.open(message, type, reader);
        if (!message.sender().equals(subject.apply(payload))) {
            throw EnvelopeFormat.invalid("'" + message.sender() + "' cannot send " + type + " for '" + subject.apply(payload) + "'");
        }
        timestampWindow.check(message, now);
        MemberView member = registry.member(message.sender()).orElseThrow(() -> new AdmissionException(
                ErrorCode.INVALID_MESSAGE, ErrorKind.NOT_FOUND, "'" + message.sender() + "' is not a member; join first"));
        signature.verify(message, Ed25519.fromHex(member.publicKeyHex()));
        replay.check(message, now);
        return payload;
    }

    /** What this chain enforces (cluster name, version, features, capacity). */
    public AdmissionPolicy policy() {
        return policy;
    }

    public long nowMs() {
        return clock.millis();
    }
}
