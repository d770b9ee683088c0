package io.butterfly.coordinator.jobs;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A sample's seed is a function of (seed, step, position) alone, and neighbouring samples' seeds differ. */
class SampleSeedsTest {

    @Test
    void theSameAddressGivesTheSameSeedAndNeighboursDiffer() {
        Random random = new Random(48);
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < 2_000; i++) {
            long seed = random.nextLong();
            long step = random.nextInt(4);
            long position = random.nextInt(1 << 20);
            long s = SampleSeeds.of(seed, step, position);
            assertThat(SampleSeeds.of(seed, step, position)).isEqualTo(s);
            assertThat(seen.add(s)).isTrue();
            assertThat(SampleSeeds.of(seed, step, position + 1)).isNotEqualTo(s);
            assertThat(SampleSeeds.of(seed, step + 1, position)).isNotEqualTo(s);
            assertThat(SampleSeeds.of(seed + 1, step, position)).isNotEqualTo(s);
        }
    }

    /** The documented formula (docs/jobs.md), so a client in another language can check a sample's seed. */
    @Test
    void matchesTheDocumentedValue() {
        assertThat(SampleSeeds.of(42, 0, 0)).isEqualTo(SampleSeeds.mix(
                SampleSeeds.mix(SampleSeeds.mix(42 + 0x9E3779B97F4A7C15L) ^ 0) + 0x9E3779B97F4A7C15L ^ 0));
        assertThat(Long.toUnsignedString(SampleSeeds.of(42, 0, 0))).isEqualTo(
                Long.toUnsignedString(SampleSeeds.of(42, 0, 0)));
    }
}
