package io.butterfly.discovery.api.rest;

import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipRegistry;
import io.butterfly.proto.common.v1.NodeCapabilities;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** {@code GET /api/v1/members}: the membership view with capabilities. */
@RestController
@RequestMapping("/api/v1/members")
public class MembersController {

    private final MembershipRegistry registry;

    public MembersController(MembershipRegistry registry) {
        this.registry = registry;
    }

    @GetMapping
    public List<Map<String, Object>> members(@RequestParam(name = "role", required = false) String role) {
        return registry.members(role).stream().map(MembersController::toJson).toList();
    }

    private static Map<String, Object> toJson(MemberView m) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("node_id", m.nodeId());
        out.put("role", m.role());
        out.put("address", m.host() + ":" + m.grpcPort());
        out.put("http_port", m.httpPort());
        out.put("version", m.version());
        out.put("joined_at", Instant.ofEpochMilli(m.joinedAtMs()).toString());
        out.put("last_seen", Instant.ofEpochMilli(m.lastSeenMs()).toString());
        out.put("public_key", m.publicKeyHex());
        if (m.capabilities() instanceof NodeCapabilities c) {
            out.put("capabilities", Map.of(
                    "cpu_cores", c.getCpuCores(),
                    "memory_bytes", c.getMemoryBytes(),
                    "measured_gflops", c.getMeasuredGflops(),
                    "memory_bandwidth_gbps", c.getMemoryBandwidthGbps(),
                    "storage_type", c.getStorageType().name(),
                    "device", c.getDevice(),
                    "gpus", c.getGpusCount()));
        }
        return out;
    }
}
