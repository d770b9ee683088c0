package io.butterfly.worker.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.util.JsonFormat;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.worker.capability.Capabilities;
import io.butterfly.worker.capability.StorageType;
import io.butterfly.worker.gateway.GatewayMessages;
import java.util.List;
import org.junit.jupiter.api.Test;

class ConsulCapabilitiesRegistrationTest {

    @Test
    void theMetadataSummaryParsesBackIntoTheSameCapabilities() throws Exception {
        Capabilities caps = new Capabilities(16, Long.MAX_VALUE / 3, 0, 0, "cpu()", List.of(), 123.25, 41.5,
                StorageType.NVME, 2);
        String json = ConsulCapabilitiesRegistration.summary(caps);
        assertTrue(json.length() <= 512, "fits a Consul metadata value: " + json.length());

        // what discovery's consul backend does with it
        NodeCapabilities.Builder parsed = NodeCapabilities.newBuilder();
        JsonFormat.parser().ignoringUnknownFields().merge(json, parsed);
        assertEquals(GatewayMessages.capabilities(caps), parsed.build());
    }
}
