package io.butterfly.discovery.api.rest;

import io.butterfly.common.api.MemberStatus;
import io.butterfly.discovery.membership.Capabilities;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipStore;
import java.time.Instant;
import java.util.List;
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
    public List<MemberStatus> members(@RequestParam(name = "role", required = false) String role) {
        return registry.members(role).stream().map(MembersController::status).toList();
    }

    private static MemberStatus status(MemberView m) {
        Capabilities c = m.capabilities();
        return new MemberStatus(m.nodeId(), m.role(), m.state().name(), m.host() + ":" + m.grpcPort(), m.httpPort(),
                m.version(), instant(m.joinedAtMs()), instant(m.lastSeenMs()), m.publicKeyHex(),
                c == null ? null : new MemberStatus.Capabilities(c.cpuCores(), c.memoryBytes(), c.measuredGflops(),
                        c.memoryBandwidthGbps(), c.storageType(), c.device(), c.gpus().size(), c.weightBytes()));
    }

    /** ISO-8601, or null for 0: not known. */
    private static String instant(long epochMillis) {
        return epochMillis == 0 ? null : Instant.ofEpochMilli(epochMillis).toString();
    }
}
