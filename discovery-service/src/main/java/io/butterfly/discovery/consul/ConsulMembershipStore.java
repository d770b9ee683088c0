package io.butterfly.discovery.consul;

import io.butterfly.discovery.membership.CapabilitiesCodec;
import io.butterfly.discovery.membership.MemberState;
import io.butterfly.discovery.membership.ListingMembershipStore;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipStore;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.consul.ConsulClient;
import org.springframework.cloud.consul.model.http.health.Check;
import org.springframework.cloud.consul.model.http.health.HealthService;

/**
 * The {@code consul} backend (docs/bootstrap-protocol.md §4.2): every service registers itself through Spring Cloud
 * Consul with the tags {@code cluster:<name>} and {@code version:<v>} and the metadata {@code node_id},
 * {@code role}, {@code grpc_port} (and {@code capabilities} where known), so the listing is the Consul catalog
 * filtered by the cluster tag, each entry's state taken from its health checks.
 *
 * <p>Joins still pass discovery's admission chain; their signed identities and capabilities are kept in
 * {@code joined} (this replica) and merged into the catalog entries with the same node id; a joined node the
 * catalog does not show (yet) is listed too, so planning never waits on a Consul health check.
 */
public final class ConsulMembershipStore extends ListingMembershipStore {

    private static final Logger log = LoggerFactory.getLogger(ConsulMembershipStore.class);

    private final ConsulClient consul;
    private final String clusterTag;
    private final CapabilitiesCodec codec;
    private volatile long lastWarnMs;

    public ConsulMembershipStore(ConsulClient consul, String clusterName, MembershipStore joined, CapabilitiesCodec codec) {
        super(joined);
        this.consul = consul;
        this.clusterTag = "cluster:" + clusterName;
        this.codec = codec;
    }

    @Override
    public List<MemberView> members(String role) {
        List<MemberView> out = new ArrayList<>();
        try {
            Map<String, List<String>> services = consul.getCatalogServices().getBody();
            if (services != null) {
                services.forEach((name, tags) -> {
                    if (tags != null && tags.contains(clusterTag)) {
                        List<HealthService> entries = consul.getHealthServices(name).getBody();
                        for (HealthService entry : entries == null ? List.<HealthService>of() : entries) {
                            MemberView m = toMember(entry);
                            if (m != null && (role == null || role.equals(m.role()))) {
                                out.add(m);
                            }
                        }
                    }
                });
            }
        } catch (RuntimeException e) {
            // Consul down must not stop the cluster: list what joined here, and say why the rest is missing.
            out.clear();
            long now = System.currentTimeMillis();
            if (now - lastWarnMs > 30_000) {
                lastWarnMs = now;
                log.warn("Consul catalog unreachable ({}); listing only the members that joined this replica", e.toString());
            }
        }
        for (MemberView m : joined.members(role)) { // joined here but not (yet) in the catalog
            if (out.stream().noneMatch(c -> c.nodeId().equals(m.nodeId()))) {
                out.add(m);
            }
        }
        out.sort(Comparator.comparing(MemberView::nodeId));
        return out;
    }

    private MemberView toMember(HealthService entry) {
        HealthService.Service s = entry.getService();
        List<String> tags = s.getTags() == null ? List.of() : s.getTags();
        if (!tags.contains(clusterTag)) {
            return null; // another cluster's instance of the same service
        }
        Map<String, String> meta = s.getMeta() == null ? Map.of() : s.getMeta();
        String nodeId = meta.getOrDefault("node_id", s.getId());
        String role = meta.getOrDefault("role", s.getService().replaceFirst("-service$", ""));
        String host = s.getAddress() != null && !s.getAddress().isBlank() ? s.getAddress()
                : entry.getNode() == null ? null : entry.getNode().getAddress();
        int httpPort = s.getPort() == null ? 0 : s.getPort();
        int grpcPort = parsePort(meta.get("grpc_port"), httpPort);
        String version = tags.stream().filter(t -> t.startsWith("version:")).map(t -> t.substring(8)).findFirst().orElse(null);
        boolean passing = entry.getChecks() == null || entry.getChecks().stream()
                .allMatch(c -> c.getStatus() == Check.CheckStatus.PASSING);
        MemberState state = passing ? MemberState.PASSING : MemberState.UNHEALTHY;
        Optional<MemberView> admitted = joined.member(nodeId).filter(MemberView::acknowledged);
        if (admitted.isPresent()) { // its signed join tells more than the catalog: identity, capabilities, times
            MemberView a = admitted.get();
            return new MemberView(a.nodeId(), a.role(), a.host(), a.grpcPort(), a.httpPort(), a.version(), a.joinedAtMs(),
                    a.lastSeenMs(), a.capabilities(), a.publicKeyHex(), true, state);
        }
        return new MemberView(nodeId, role, host, grpcPort, httpPort, version, 0, 0, codec.fromJson(meta.get("capabilities")),
                null, false, state);
    }

    private static int parsePort(String value, int fallback) {
        try {
            return value == null ? fallback : Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            return fallback;
        }
    }
}
