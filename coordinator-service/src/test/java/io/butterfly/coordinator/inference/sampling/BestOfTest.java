package io.butterfly.coordinator.inference.sampling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** {@code best_of}'s ranking, over seeded random candidates (ties included). */
class BestOfTest {

    @Test
    void theNBestByCumulativeLogprobComeBestFirstTiesInOrder() {
        Random random = new Random(51);
        for (int round = 0; round < 500; round++) {
            int count = 1 + random.nextInt(16);
            List<List<Double>> candidates = new ArrayList<>(count);
            for (int c = 0; c < count; c++) {
                List<Double> lps = new ArrayList<>();
                int tokens = random.nextInt(6);
                for (int t = 0; t < tokens; t++) {
                    lps.add(random.nextInt(4) == 0 ? -1.0 : -random.nextDouble() * 5); // -1.0 often: ties
                }
                candidates.add(lps);
            }
            int n = 1 + random.nextInt(count);

            List<Integer> best = BestOf.best(candidates, n);

            assertThat(best).hasSize(n).doesNotHaveDuplicates();
            for (int k = 1; k < n; k++) {
                double before = BestOf.cumulative(candidates.get(best.get(k - 1)));
                double after = BestOf.cumulative(candidates.get(best.get(k)));
                assertThat(before).isGreaterThanOrEqualTo(after);
                if (before == after) {
                    assertThat(best.get(k - 1)).isLessThan(best.get(k));
                }
            }
            Set<Integer> chosen = new HashSet<>(best);
            double worstChosen = BestOf.cumulative(candidates.get(best.get(n - 1)));
            for (int c = 0; c < count; c++) {
                if (!chosen.contains(c)) { // no candidate left out beats one chosen, nor ties it from before
                    double score = BestOf.cumulative(candidates.get(c));
                    assertThat(score).isLessThanOrEqualTo(worstChosen);
                    if (score == worstChosen) {
                        assertThat(c).isGreaterThan(best.get(n - 1));
                    }
                }
            }
        }
    }

    @Test
    void nMustBeAtMostTheCandidates() {
        assertThatThrownBy(() -> BestOf.best(List.of(List.of(-1.0)), 2)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> BestOf.best(List.of(List.of(-1.0)), 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
