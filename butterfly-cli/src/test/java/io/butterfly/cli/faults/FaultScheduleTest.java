package io.butterfly.cli.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FaultScheduleTest {

    private static final List<String> TARGETS = List.of("coordinator", "coordinator-1", "worker-0", "worker-1");
    private static final FaultSchedule.Settings SETTINGS = new FaultSchedule.Settings(12, List.of(FaultKind.values()),
            TARGETS, Duration.ofMillis(200), Duration.ofMillis(900), Duration.ofMillis(500), Duration.ofSeconds(2),
            Duration.ofSeconds(10), List.of("coordinator", "discovery"));

    @Test
    void theSameSeedGivesTheSameScheduleAndAnotherSeedAnother() {
        assertThat(FaultSchedule.generate(5, SETTINGS)).isEqualTo(FaultSchedule.generate(5, SETTINGS));
        assertThat(FaultSchedule.generate(5, SETTINGS).faults()).isNotEqualTo(FaultSchedule.generate(6, SETTINGS).faults());
    }

    @Test
    void faultsComeOneAfterAnotherWithinTheSettings() {
        for (long seed = 0; seed < 200; seed++) {
            FaultSchedule s = FaultSchedule.generate(seed, SETTINGS);
            assertThat(s.faults()).hasSize(12);
            long previousEnd = 0;
            for (Fault f : s.faults()) {
                assertThat(f.startMs() - previousEnd).as("gap").isBetween(200L, 900L);
                assertThat(f.lastsMs()).isBetween(500L, 2000L);
                if (f.kind() == FaultKind.CLOCK_SKEW) {
                    assertThat(f.target()).isIn("coordinator", "discovery");
                    assertThat(Math.abs(f.skewMs())).isBetween(1L, 10_000L);
                } else {
                    assertThat(f.target()).isIn(TARGETS);
                    assertThat(f.skewMs()).isZero();
                }
                previousEnd = f.endMs();
            }
            assertThat(s.endMs()).isEqualTo(previousEnd);
        }
    }

    @Test
    void overManySeedsEveryKindHitsEveryTarget() {
        Set<FaultKind> kinds = EnumSet.noneOf(FaultKind.class);
        Set<String> targets = new java.util.HashSet<>();
        for (long seed = 0; seed < 50; seed++) {
            FaultSchedule.generate(seed, SETTINGS).faults().forEach(f -> {
                kinds.add(f.kind());
                targets.add(f.target());
            });
        }
        assertThat(kinds).containsExactlyInAnyOrder(FaultKind.values());
        assertThat(targets).containsAll(TARGETS).contains("discovery");
    }

    @Test
    void clockSkewsNeedTheirTargets() {
        assertThatThrownBy(() -> new FaultSchedule.Settings(1, List.of(FaultKind.CLOCK_SKEW), TARGETS, Duration.ZERO,
                Duration.ZERO, Duration.ZERO, Duration.ZERO, Duration.ofSeconds(1), List.of()))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
