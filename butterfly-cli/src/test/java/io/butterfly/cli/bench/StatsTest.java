package io.butterfly.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The benchmarks' summary numbers, printed as scripts read them. */
class StatsTest {

    @Test
    void theMedianOfPrintedNumbersIsTheMiddleOneAsGivenOrTheMeanOfTheMiddleTwo() {
        assertThat(Stats.median(List.of("5152"))).isEqualTo("5152");
        assertThat(Stats.median(List.of("3.10", "0.85", "1.20"))).isEqualTo("1.20");
        assertThat(Stats.median(List.of("4", "1", "3", "2"))).isEqualTo("2.50");
        assertThat(Stats.median(List.of("1.20", "0.80"))).isEqualTo("1");
        assertThat(Stats.median(List.of("10", "2"))).isEqualTo("6"); // numerically, not as text
    }

    @Test
    void ratiosHaveTwoDecimals() {
        assertThat(Stats.ratio(5152, 2042)).isEqualTo("2.52");
        assertThat(Stats.ratio(5152, 585)).isEqualTo("8.81");
    }

    @Test
    void percentilesAreNearestRank() {
        List<Long> samples = List.of(306L, 318L);
        assertThat(Stats.percentile(samples, 0)).isEqualTo(306);
        assertThat(Stats.percentile(samples, 50)).isEqualTo(306);
        assertThat(Stats.percentile(samples, 99)).isEqualTo(318);
        assertThat(Stats.percentile(List.of(), 50)).isEqualTo(-1);
        assertThat(Stats.median(new double[]{3, 1, 2, 4})).isEqualTo(2.5);
    }
}
