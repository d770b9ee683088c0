package io.butterfly.common.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ReductionTreeTest {

    @Test
    void theTreeIsFixedByTheOrderOfTheIds() {
        assertThat(new ReductionTree(List.of("a")).shape()).isEqualTo("a");
        assertThat(new ReductionTree(List.of("a", "b", "c")).shape()).isEqualTo("((a + b) + c)");
        assertThat(new ReductionTree(List.of("a", "b", "c", "d")).shape()).isEqualTo("((a + b) + (c + d))");
        assertThat(new ReductionTree(List.of("a", "b", "c", "d", "e")).shape()).isEqualTo("(((a + b) + c) + (d + e))");
        assertThat(new ReductionTree(List.of("c", "a", "b")).shape()).isEqualTo("((c + a) + b)");
    }

    /** Seeded random arrival orders of seeded random partials: every order gives the same bits. */
    @Test
    void arrivalOrderNeverChangesTheBits() {
        Random random = new Random(49);
        int orderDependentSums = 0;
        for (int round = 0; round < 300; round++) {
            int nodes = 1 + random.nextInt(9);
            int length = 1 + random.nextInt(40);
            List<String> ids = new ArrayList<>();
            Map<String, float[]> partials = new HashMap<>();
            for (int i = 0; i < nodes; i++) {
                String id = "worker-" + random.nextInt(1000) + "-" + i;
                ids.add(id);
                partials.put(id, random.nextInt(5) == 0 ? null : partial(random, length));
            }
            ReductionTree tree = new ReductionTree(ids);
            float[] expected = tree.reduce(partials, length);
            for (int order = 0; order < 12; order++) {
                List<String> arrival = new ArrayList<>(ids);
                Collections.shuffle(arrival, random);
                ReductionTree.Reduction r = tree.start(length);
                for (String id : arrival) {
                    assertThat(r.complete()).isFalse();
                    r.add(id, partials.get(id));
                }
                assertThat(bits(r.result())).as("round %d, arrival %s", round, arrival).isEqualTo(bits(expected));
                if (!java.util.Arrays.equals(bits(inArrivalOrder(arrival, partials, length)), bits(expected))) {
                    orderDependentSums++;
                }
            }
        }
        // the partials are such that adding them in arrival order would often give other bits: the tree is what fixes them
        assertThat(orderDependentSums).isGreaterThan(500);
    }

    /** Up to three nodes, the tree adds the partials one after another in id order: a loop's bits. */
    @Test
    void upToThreeNodesTheTreeIsTheLoop() {
        Random random = new Random(7);
        for (int round = 0; round < 200; round++) {
            int nodes = 1 + random.nextInt(3);
            List<String> ids = new ArrayList<>();
            Map<String, float[]> partials = new HashMap<>();
            for (int i = 0; i < nodes; i++) {
                ids.add("n" + i);
                partials.put("n" + i, partial(random, 16));
            }
            assertThat(bits(new ReductionTree(ids).reduce(partials, 16))).isEqualTo(bits(inArrivalOrder(ids, partials, 16)));
        }
    }

    @Test
    void aMissingContributionIsTheIdentityNotAZero() {
        ReductionTree tree = new ReductionTree(List.of("a", "b"));
        float[] negativeZero = {-0.0f};
        float[] sum = tree.reduce(Map.of("a", negativeZero), 1);
        assertThat(Float.floatToRawIntBits(sum[0])).isEqualTo(Float.floatToRawIntBits(-0.0f));
        assertThat(tree.reduce(Map.of(), 3)).containsExactly(0f, 0f, 0f);
    }

    @Test
    void refusesUnknownRepeatedAndMisshapenContributions() {
        ReductionTree tree = new ReductionTree(List.of("a", "b"));
        ReductionTree.Reduction r = tree.start(2);
        assertThatThrownBy(() -> r.add("z", new float[2])).hasMessageContaining("not in the reduction tree");
        assertThatThrownBy(() -> r.add("a", new float[3])).hasMessageContaining("sent 3 values, expected 2");
        r.add("a", new float[2]);
        assertThatThrownBy(() -> r.add("a", new float[2])).hasMessageContaining("already contributed");
        assertThatThrownBy(r::result).hasMessageContaining("waits for [b]");
        assertThatThrownBy(() -> new ReductionTree(List.of("a", "a"))).hasMessageContaining("twice");
        assertThatThrownBy(() -> new ReductionTree(List.of())).hasMessageContaining("at least one");
    }

    /** Values of widely different magnitudes and signs, so that the order of additions shows in the bits. */
    private static float[] partial(Random random, int length) {
        float[] p = new float[length];
        for (int i = 0; i < length; i++) {
            p[i] = (float) ((random.nextDouble() - 0.5) * Math.pow(2, random.nextInt(40) - 20));
        }
        return p;
    }

    private static float[] inArrivalOrder(List<String> order, Map<String, float[]> partials, int length) {
        float[] sum = null;
        for (String id : order) {
            float[] p = partials.get(id);
            if (p == null) {
                continue;
            }
            if (sum == null) {
                sum = p.clone();
            } else {
                for (int i = 0; i < length; i++) {
                    sum[i] += p[i];
                }
            }
        }
        return sum == null ? new float[length] : sum;
    }

    private static int[] bits(float[] values) {
        int[] b = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            b[i] = Float.floatToRawIntBits(values[i]);
        }
        return b;
    }
}
