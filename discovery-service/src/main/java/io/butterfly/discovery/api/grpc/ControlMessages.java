package io.butterfly.discovery.api.grpc;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Parser;
import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.discovery.admission.Candidate;
import io.butterfly.discovery.admission.Join;
import io.butterfly.discovery.admission.PayloadReader;
import io.butterfly.discovery.admission.SignedMessage;
import io.butterfly.discovery.membership.Capabilities;
import io.butterfly.proto.common.v1.GpuInfo;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.common.v1.SignedEnvelope;
import io.butterfly.proto.common.v1.StorageType;
import io.butterfly.proto.discovery.v1.JoinRequest;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import java.util.Locale;

/** Signed envelopes and their payloads off the wire, into what admission judges. */
public final class ControlMessages {

    private ControlMessages() {
    }

    public static SignedMessage read(SignedEnvelope e) {
        SignedMessage.Version version = e.hasProtocolVersion() ? new SignedMessage.Version(
                e.getProtocolVersion().getMajor(), e.getProtocolVersion().getMinor(), e.getProtocolVersion().getPatch())
                : null;
        return new SignedMessage(e.getMessageType().name(), e.getSender(), e.getRecipient(), e.getMessageId(),
                e.getTimestampMs(), version, !e.getUnknownFields().asMap().isEmpty(), e.getPayload().toByteArray(),
                e.getSignature().toByteArray(), () -> ControlEnvelopes.canonicalBytes(e));
    }

    /** A payload parsed as {@code parser}'s message; the parser's complaint when it does not decode. */
    public static <T> PayloadReader<T> parsing(Parser<T> parser) {
        return bytes -> {
            try {
                return parser.parseFrom(bytes);
            } catch (InvalidProtocolBufferException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
        };
    }

    /** JOIN_REQUEST payloads as admission reads them. */
    public static final PayloadReader<Join> JOIN = bytes -> join(parsing(JoinRequest.parser()).read(bytes));

    public static Join join(JoinRequest r) {
        Member m = r.getMember();
        return new Join(r.getClusterName(), new Candidate(m.getNodeId(), role(m.getRole()), m.getHost(), m.getGrpcPort(),
                m.getHttpPort(), m.getVersion(), m.getPublicKey().toByteArray(), capabilities(m.getCapabilities())),
                r.getPublicKey().toByteArray(), r.getFeatures());
    }

    /** {@code worker}, {@code coordinator} or {@code registry}; null for none or one this version does not know. */
    public static String role(NodeRole role) {
        return role == NodeRole.NODE_ROLE_UNSPECIFIED || role == NodeRole.UNRECOGNIZED ? null
                : role.name().toLowerCase(Locale.ROOT);
    }

    public static Capabilities capabilities(NodeCapabilities c) {
        return new Capabilities(c.getCpuCores(), c.getMemoryBytes(), c.getMaxModelBytes(), c.getGpusList().stream()
                .map(g -> new Capabilities.Gpu(g.getIndex(), g.getName(), g.getMemoryBytes())).toList(),
                c.getMeasuredGflops(), c.getDevice(), c.getMemoryBandwidthGbps(), c.getStorageType().name(),
                c.getMemoryLimitBytes(), c.getWeightBytes());
    }

    public static NodeCapabilities toProto(Capabilities c) {
        NodeCapabilities.Builder b = NodeCapabilities.newBuilder().setCpuCores(c.cpuCores()).setMemoryBytes(c.memoryBytes())
                .setMaxModelBytes(c.maxModelBytes()).setMeasuredGflops(c.measuredGflops()).setDevice(c.device())
                .setMemoryBandwidthGbps(c.memoryBandwidthGbps()).setMemoryLimitBytes(c.memoryLimitBytes())
                .setWeightBytes(c.weightBytes());
        c.gpus().forEach(g -> b.addGpus(GpuInfo.newBuilder().setIndex(g.index()).setName(g.name())
                .setMemoryBytes(g.memoryBytes())));
        try {
            b.setStorageType(StorageType.valueOf(c.storageType()));
        } catch (IllegalArgumentException unknown) {
            b.setStorageType(StorageType.STORAGE_TYPE_UNSPECIFIED); // a newer node's kind: not one this version names
        }
        return b.build();
    }
}
