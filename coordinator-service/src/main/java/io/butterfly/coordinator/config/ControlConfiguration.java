package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.Liveness;
import io.butterfly.coordinator.control.LivenessMonitor;
import io.butterfly.coordinator.control.PrefixCacheReports;
import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Failure detection: heartbeats observed on every replica, verdicts taken by the leader's monitor. */
@Configuration
public class ControlConfiguration {

    @Bean
    Liveness liveness(LivenessProperties props, Clock clock) {
        return new Liveness(props.detectorSettings(), clock);
    }

    @Bean
    PrefixCacheReports prefixCacheReports() {
        return new PrefixCacheReports();
    }

    @Bean(initMethod = "start", destroyMethod = "close")
    LivenessMonitor livenessMonitor(ControlLog control, Liveness liveness, LivenessProperties props, Clock clock) {
        return new LivenessMonitor(control, liveness, props.monitorSettings(), clock);
    }
}
