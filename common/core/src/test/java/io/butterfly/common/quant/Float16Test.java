package io.butterfly.common.quant;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Half precision as ggml rounds to it (nearest, ties to even), checked over every half. */
class Float16Test {

    @Test
    void everyHalfSurvivesTheRoundTrip() {
        for (int h = 0; h < 0x10000; h++) {
            float f = Float16.toFloat((short) h);
            if (Float.isNaN(f)) {
                assertThat(Float.isNaN(Float16.toFloat(Float16.fromFloat(f)))).isTrue();
                continue;
            }
            assertThat(Float16.fromFloat(f) & 0xFFFF).as("half %04x", h).isEqualTo(h);
        }
    }

    @Test
    void aValueBetweenTwoHalvesGoesToTheNearerAndATieToTheEvenOne() {
        for (int h = 0; h < 0x7BFF; h++) { // every finite positive half but the largest, and its successor
            double lo = Float16.toFloat((short) h);
            double hi = Float16.toFloat((short) (h + 1));
            double mid = (lo + hi) / 2; // exact in float32: one more bit than a half has
            int even = (h & 1) == 0 ? h : h + 1;
            assertThat(Float16.fromFloat((float) mid) & 0xFFFF).as("tie between %04x and %04x", h, h + 1).isEqualTo(even);
            assertThat(Float16.fromFloat(Math.nextDown((float) mid)) & 0xFFFF).isEqualTo(h);
            assertThat(Float16.fromFloat(Math.nextUp((float) mid)) & 0xFFFF).isEqualTo(h + 1);
            assertThat(Float16.fromFloat((float) -mid) & 0xFFFF).isEqualTo(even | 0x8000);
        }
    }

    @Test
    void beyondTheLargestHalfIsInfinityAndBelowTheSmallestIsZero() {
        assertThat(Float16.fromFloat(65504f) & 0xFFFF).isEqualTo(0x7BFF);
        assertThat(Float16.fromFloat(65519.99f) & 0xFFFF).isEqualTo(0x7BFF);
        assertThat(Float16.fromFloat(65520f) & 0xFFFF).isEqualTo(0x7C00);
        assertThat(Float16.fromFloat(Float.NEGATIVE_INFINITY) & 0xFFFF).isEqualTo(0xFC00);
        assertThat(Float16.fromFloat(0x1p-25f) & 0xFFFF).isEqualTo(0); // half the smallest subnormal: a tie, to even 0
        assertThat(Float16.fromFloat(Math.nextUp(0x1p-25f)) & 0xFFFF).isEqualTo(1);
        assertThat(Float16.fromFloat(-0.0f) & 0xFFFF).isEqualTo(0x8000);
    }
}
