package io.butterfly.discovery.api.grpc;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.butterfly.discovery.membership.Capabilities;
import io.butterfly.discovery.membership.CapabilitiesCodec;
import io.butterfly.proto.common.v1.NodeCapabilities;

/** Capabilities as the proto's canonical JSON (readable in Hazelcast tools and Consul's service metadata). */
public final class NodeCapabilitiesJson implements CapabilitiesCodec {

    private static final JsonFormat.Printer PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();
    private static final JsonFormat.Parser PARSER = JsonFormat.parser().ignoringUnknownFields();

    @Override
    public String toJson(Capabilities capabilities) {
        if (capabilities == null) {
            return null;
        }
        try {
            return PRINTER.print(ControlMessages.toProto(capabilities));
        } catch (InvalidProtocolBufferException e) {
            throw new IllegalStateException("capabilities cannot be printed as JSON", e);
        }
    }

    @Override
    public Capabilities fromJson(String json) {
        if (json == null || json.isBlank()) {
            return null;
        }
        NodeCapabilities.Builder b = NodeCapabilities.newBuilder();
        try {
            PARSER.merge(json, b);
        } catch (InvalidProtocolBufferException e) {
            return null; // a summary some other tool wrote: listed without capabilities rather than not at all
        }
        return ControlMessages.capabilities(b.build());
    }
}
