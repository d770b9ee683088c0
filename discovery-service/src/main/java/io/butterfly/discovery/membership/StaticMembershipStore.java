package io.butterfly.discovery.membership;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@code static} backend (docs/initialization-and-bootstrap.md §3.1): a configured seed list. The listing holds
 * the nodes that joined this replica (they carry signed identities and capabilities) plus every seed that
 * answers a reachability probe and has not joined (state {@link MemberState#REACHABLE}). Probe results are
 * reused for {@code probeInterval}, so a listing does not wait for a down seed's connect timeout every time.
 */
public final class StaticMembershipStore extends ListingMembershipStore {

    private record Probe(boolean reachable, long atMs) {
    }

    private final List<StaticSeed> seeds;
    private final SeedProbe probe;
    private final long probeIntervalMs;
    private final Clock clock;
    private final Map<String, Probe> probes = new ConcurrentHashMap<>();

    public StaticMembershipStore(MembershipStore joined, List<StaticSeed> seeds, SeedProbe probe, Duration probeInterval,
                                 Clock clock) {
        super(joined);
        this.seeds = List.copyOf(seeds);
        this.probe = probe;
        this.probeIntervalMs = probeInterval.toMillis();
        this.clock = clock;
    }

    @Override
    public List<MemberView> members(String role) {
        List<MemberView> out = new ArrayList<>(joined.members(role));
        for (StaticSeed seed : seeds) {
            boolean listed = out.stream().anyMatch(m -> m.nodeId().equals(seed.nodeId()));
            if (!listed && joined.member(seed.nodeId()).isEmpty() && (role == null || role.equals(seed.role()))) {
                long now = clock.millis();
                Probe p = probes.get(seed.nodeId());
                if (p == null || now - p.atMs() >= probeIntervalMs) {
                    p = new Probe(probe.reachable(seed), now);
                    probes.put(seed.nodeId(), p);
                }
                if (p.reachable()) {
                    out.add(new MemberView(seed.nodeId(), seed.role(), seed.host(), seed.grpcPort(), 0, null, 0, p.atMs(),
                            null, null, false, MemberState.REACHABLE));
                }
            }
        }
        out.sort(Comparator.comparing(MemberView::nodeId));
        return out;
    }
}
