package io.butterfly.coordinator.control;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.liveness.DetectorSettings;
import io.butterfly.coordinator.liveness.LivenessPolicy;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leader-side failure monitor: every few tens of milliseconds it evaluates phi for every node and
 * submits the verdicts to the control log. It runs on its own thread so nothing else scheduled in the
 * coordinator can delay detection. Listeners hear about committed verdicts (e.g. to reload a stage on
 * a node that came back without its partition).
 */
public class LivenessMonitor implements AutoCloseable {

    /**
     * @param detector        the phi-accrual detector's thresholds and window
     * @param monitorInterval how often phi is evaluated
     * @param maxLocalPause   a tick this much later than due means this coordinator itself was paused (GC, CPU
     *                        starvation): heartbeats may be queued unread, so it takes no verdicts for that long
     * @param unheardGrace    an assigned node this leader has not heard once in this long after it began leading is
     *                        FAILED
     * @param loadingPause    silence a node loading its partition may keep before phi judges it
     */
    public record Settings(DetectorSettings detector, Duration monitorInterval, Duration maxLocalPause,
                           Duration unheardGrace, Duration loadingPause) {
    }

    private static final Logger log = LoggerFactory.getLogger(LivenessMonitor.class);

    private final ControlLog control;
    private final Liveness liveness;
    private final LivenessPolicy policy;
    private final Clock clock;
    private final long intervalMs;
    private final long maxLocalPauseMs;
    private long lastTickMs = -1; // monitor thread only
    private long leadingSinceMs = -1; // monitor thread only: when this replica's current leadership was first seen
    private long quietUntilMs = -1;
    private final List<Consumer<ClusterCommand>> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("liveness-monitor"));

    public LivenessMonitor(ControlLog control, Liveness liveness, Settings settings, Clock clock) {
        this.control = control;
        this.liveness = liveness;
        this.policy = new LivenessPolicy(settings.detector(), settings.unheardGrace().toMillis(),
                settings.loadingPause().toMillis());
        this.clock = clock;
        this.intervalMs = Math.max(1, settings.monitorInterval().toMillis());
        this.maxLocalPauseMs = settings.maxLocalPause().toMillis();
    }

    public void start() {
        timer.scheduleWithFixedDelay(this::tick, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
    }

    /** Called with each verdict after the control log accepted it. */
    public void onVerdict(Consumer<ClusterCommand> listener) {
        listeners.add(listener);
    }

    void tick() {
        if (!control.leadership().leading()) {
            lastTickMs = -1; // leader-only work; a follower takes no verdicts
            leadingSinceMs = -1;
            return;
        }
        try {
            long now = clock.millis();
            if (leadingSinceMs < 0) {
                leadingSinceMs = now;
            }
            long late = lastTickMs < 0 ? 0 : now - lastTickMs - intervalMs;
            lastTickMs = now;
            if (late > maxLocalPauseMs) {
                // We were paused ourselves: silence measured across our own pause is not evidence, and the
                // heartbeats that arrived meanwhile may still be unread. Give them time to be processed.
                log.info("liveness monitor ran {} ms late (local pause); no verdicts for {} ms", late, maxLocalPauseMs);
                quietUntilMs = now + maxLocalPauseMs;
            }
            if (now < quietUntilMs) {
                return;
            }
            for (ClusterCommand c : policy.evaluate(control.state(), id -> liveness.observe(id, now), now, leadingSinceMs)) {
                try {
                    control.submit(c);
                } catch (IllegalTransitionException e) {
                    log.debug("verdict {} refused: {}", c, e.getMessage());
                    continue;
                }
                log.info("liveness: {}", c);
                listeners.forEach(l -> l.accept(c));
            }
        } catch (RuntimeException e) {
            if (Thread.currentThread().isInterrupted()) {
                // The coordinator is stopping (its workers' streams closing made verdicts just then).
                log.info("liveness monitor stopped mid-tick: {}", e.getMessage());
                return;
            }
            log.warn("liveness monitor tick failed", e);
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
