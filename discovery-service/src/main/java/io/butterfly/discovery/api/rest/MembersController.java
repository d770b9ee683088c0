package io.butterfly.discovery.api.rest;

import io.butterfly.discovery.membership.Capabilities;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipStore;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /api/v1/members}: the membership view of the configured backend with capabilities and state
 * (ACTIVE: joined; REACHABLE: a static seed that answers; PASSING / UNHEALTHY: Consul's health checks).
 */
@RestController
@RequestMapping("/api/v1/members")
public class MembersController {

    private final MembershipStore registry;

    public MembersController(MembershipStore registry) {
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
        out.put("state", m.state().name());
        out.put("address", m.host() + ":" + m.grpcPort());
        out.put("http_port", m.httpPort());
        out.put("version", m.version());
        out.put("joined_at", m.joinedAtMs() == 0 ? null : Instant.ofEpochMilli(m.joinedAtMs()).toString());
        out.put("last_seen", m.lastSeenMs() == 0 ? null : Instant.ofEpochMilli(m.lastSeenMs()).toString());
        out.put("public_key", m.publicKeyHex());
        if (m.capabilities() != null) {
            Capabilities c = m.capabilities();
            out.put("capabilities", Map.of(
                    "cpu_cores", c.cpuCores(),
                    "memory_bytes", c.memoryBytes(),
                    "measured_gflops", c.measuredGflops(),
                    "memory_bandwidth_gbps", c.memoryBandwidthGbps(),
                    "storage_type", c.storageType(),
                    "device", c.device(),
                    "gpus", c.gpus().size(),
                    "weight_bytes", c.weightBytes()));
        }
        return out;
    }
}
