package io.butterfly.coordinator.control;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.coordinator.invariants.CoordinatorClaims;
import io.butterfly.coordinator.invariants.Invariant;
import io.butterfly.coordinator.invariants.InvariantChecker;
import io.butterfly.coordinator.invariants.InvariantInputs;
import io.butterfly.coordinator.invariants.Violation;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the invariant checker every second (docs/state-machines.md §7.4) on every replica. A violation is reported
 * once it holds for {@code confirmAfter} consecutive checks, logged at ERROR when it appears and at INFO when it
 * clears, and listed by the REST API (config/ counts it in the {@code butterfly.invariant.violations} gauge).
 */
public class InvariantMonitor implements AutoCloseable {

    /**
     * @param interval          how often the invariants are checked
     * @param confirmAfter      consecutive failed checks before a violation is reported
     * @param connectionTimeout silence after which an operational node breaks connection liveness
     */
    public record Settings(Duration interval, int confirmAfter, Duration connectionTimeout) {
    }

    private static final Logger log = LoggerFactory.getLogger(InvariantMonitor.class);

    /** A violation that holds: since when, in how many consecutive checks, and what was seen last. */
    public record Standing(Invariant invariant, String message, Instant since, int checks) {
    }

    /** The latest verdict: when it was checked and the confirmed violations. */
    public record Report(Instant checkedAt, List<Standing> violations) {
    }

    private final ControlLog control;
    private final Liveness liveness;
    private final CoordinatorClaims claims;
    private final Settings settings;
    private final Clock clock;
    private final InvariantChecker checker = new InvariantChecker();
    private final Map<Invariant, Standing> seen = new EnumMap<>(Invariant.class);
    private volatile Report report = new Report(null, List.of());
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("invariant-checker"));

    public InvariantMonitor(ControlLog control, Liveness liveness, CoordinatorClaims claims, Settings settings,
                            Clock clock) {
        this.control = control;
        this.liveness = liveness;
        this.claims = claims;
        this.settings = settings;
        this.clock = clock;
    }

    public void start() {
        long ms = Math.max(1, settings.interval().toMillis());
        timer.scheduleWithFixedDelay(this::checkSafely, ms, ms, TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }

    public Report report() {
        return report;
    }

    private void checkSafely() {
        try {
            check();
        } catch (RuntimeException e) {
            log.warn("invariant check failed: {}", e.toString());
        }
    }

    /** One check; returns the confirmed violations. */
    synchronized Report check() {
        long now = clock.millis();
        InvariantInputs in = new InvariantInputs(control.state(), claims.claims(),
                claims.receivesHeartbeats() ? id -> liveness.observe(id, now) : null, now,
                settings.connectionTimeout().toMillis());
        Map<Invariant, Violation> current = new EnumMap<>(Invariant.class);
        for (Violation v : checker.check(in)) {
            current.putIfAbsent(v.invariant(), v);
        }
        for (Invariant gone : new ArrayList<>(seen.keySet())) {
            if (!current.containsKey(gone)) {
                Standing s = seen.remove(gone);
                if (s.checks() >= settings.confirmAfter()) {
                    log.info("invariant {} holds again (violated since {})", gone, s.since());
                }
            }
        }
        Instant at = Instant.ofEpochMilli(now);
        List<Standing> confirmed = new ArrayList<>();
        current.forEach((inv, v) -> {
            Standing before = seen.get(inv);
            Standing s = before == null ? new Standing(inv, v.message(), at, 1)
                    : new Standing(inv, v.message(), before.since(), before.checks() + 1);
            seen.put(inv, s);
            if (s.checks() == settings.confirmAfter()) {
                log.error("invariant violated: invariant={} since={} detail={}", inv, s.since(), v.message());
            }
            if (s.checks() >= settings.confirmAfter()) {
                confirmed.add(s);
            }
        });
        report = new Report(at, List.copyOf(confirmed));
        return report;
    }
}
