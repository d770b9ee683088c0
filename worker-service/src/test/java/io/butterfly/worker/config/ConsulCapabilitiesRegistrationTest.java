package io.butterfly.worker.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.util.JsonFormat;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.common.v1.StorageType;
import org.junit.jupiter.api.Test;

class ConsulCapabilitiesRegistrationTest {

    @Test
    void theMetadataSummaryParsesBackIntoTheSameCapabilities() throws Exception {
        NodeCapabilities caps = NodeCapabilities.newBuilder().setCpuCores(16).setMemoryBytes(Long.MAX_VALUE / 3)
                .setMeasuredGflops(123.25).setMemoryBandwidthGbps(41.5).setStorageType(StorageType.NVME).setDevice("cpu()").build();
        String json = ConsulCapabilitiesRegistration.summary(caps);
        assertTrue(json.length() <= 512, "fits a Consul metadata value: " + json.length());

        // what discovery's consul backend does with it
        NodeCapabilities.Builder parsed = NodeCapabilities.newBuilder();
        JsonFormat.parser().ignoringUnknownFields().merge(json, parsed);
        assertEquals(caps, parsed.build());
    }
}
