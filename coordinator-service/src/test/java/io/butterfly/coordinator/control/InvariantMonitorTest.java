package io.butterfly.coordinator.control;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.config.LivenessProperties;
import io.butterfly.coordinator.invariants.CoordinatorClaim;
import io.butterfly.coordinator.invariants.CoordinatorClaims;
import io.butterfly.coordinator.invariants.Invariant;
import io.butterfly.coordinator.planning.StageAssignment;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A violation is reported only once it holds for confirm-after checks, and disappears when it clears. */
class InvariantMonitorTest {

    private long now = 10_000;
    private final Clock clock = new Clock() {
        @Override
        public java.time.ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(now);
        }
    };
    private final LivenessProperties liveness = new LivenessProperties(8.0, 4.0, 200, Duration.ofMillis(100),
            Duration.ofMillis(800), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(25),
            Duration.ofMillis(250), Duration.ofSeconds(10), Duration.ofSeconds(5));
    private final InMemoryControlLog control = new InMemoryControlLog();
    private final Liveness beats = new Liveness(liveness.detectorSettings(), clock);
    private final CoordinatorClaims alone = new CoordinatorClaims() {
        @Override
        public List<CoordinatorClaim> claims() {
            return List.of(new CoordinatorClaim("c0", true, 1));
        }

        @Override
        public boolean receivesHeartbeats() {
            return true;
        }
    };
    private InvariantMonitor monitor;

    @BeforeEach
    void setUp() {
        monitor = new InvariantMonitor(control, beats, alone,
                new InvariantMonitor.Settings(Duration.ofSeconds(1), 2, Duration.ofSeconds(2)), clock);
    }

    @AfterEach
    void tearDown() {
        control.close();
    }

    @Test
    void aSilentReadyNodeIsReportedAfterTwoChecksAndClearedWhenItBeatsAgain() {
        control.submit(new ClusterCommand.Bootstrap("tiny", 1, 1));
        control.submit(new ClusterCommand.ModelResolved("tiny", "root", 2));
        control.submit(new ClusterCommand.NodeJoined(new NodeInfo("w1", "worker", "127.0.0.1", 1, 2, 2, 1L << 30, 1,
                "cpu"), 3));
        control.submit(new ClusterCommand.PartitionsAssigned(1, List.of(new StageAssignment("w1", 0, 2, true, true)), 4));
        control.submit(new ClusterCommand.LoadCompleted("w1", 1, "c", 5));
        control.submit(new ClusterCommand.WeightsValidated(new WeightValidation(1, WeightValidation.Status.VALID, "root",
                "partition-root", List.of("w1"), List.of(), List.of(), 6), 6));
        assertThat(control.state().system()).isEqualTo(io.butterfly.coordinator.statemachine.SystemState.READY);
        beats.heartbeat("w1", 1);
        assertThat(monitor.check().violations()).isEmpty();

        now += 3000; // silent for 3 s, longer than the 2 s connection timeout
        assertThat(monitor.check().violations()).as("one failed check is not yet a violation").isEmpty();
        now += 1000;
        InvariantMonitor.Report report = monitor.check();
        assertThat(report.violations()).singleElement().satisfies(v -> {
            assertThat(v.invariant()).isEqualTo(Invariant.CONNECTION_LIVENESS);
            assertThat(v.since()).isEqualTo(Instant.ofEpochMilli(13_000));
            assertThat(v.checks()).isEqualTo(2);
        });

        beats.heartbeat("w1", 1);
        now += 100;
        assertThat(monitor.check().violations()).isEmpty();
    }
}
