package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.InvariantMonitor;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The run-time invariant checker (docs/state-machines.md §7.4).
 *
 * @param interval          how often the invariants are checked
 * @param confirmAfter      consecutive failed checks before a violation is reported; transitions that are
 *                          legitimately in flight (a worker READY a moment before the system) last less
 * @param connectionTimeout silence after which an operational node breaks connection liveness
 */
@ConfigurationProperties("butterfly.coordinator.invariants")
public record InvariantProperties(
        @DefaultValue("1s") Duration interval,
        @DefaultValue("2") int confirmAfter,
        @DefaultValue("2s") Duration connectionTimeout) {

    public InvariantProperties {
        if (confirmAfter < 1) {
            throw new IllegalArgumentException("butterfly.coordinator.invariants.confirm-after must be >= 1: "
                    + confirmAfter);
        }
    }

    public InvariantMonitor.Settings monitorSettings() {
        return new InvariantMonitor.Settings(interval, confirmAfter, connectionTimeout);
    }
}
