package io.butterfly.common.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class SliceTreeTest {

    /** Partials of widely different magnitudes, so that the order of the additions shows in the bits. */
    private static float[][] partials(Random random, int slices, int length) {
        float[][] p = new float[slices][length];
        for (float[] row : p) {
            for (int i = 0; i < length; i++) {
                row[i] = (float) (random.nextGaussian() * Math.pow(10, random.nextInt(7) - 3));
            }
        }
        return p;
    }

    @Test
    void everyNumberOfShardsAndEveryArrivalOrderGivesTheBitsOfOneWorker() {
        Random random = new Random(49);
        int orderChanged = 0;
        int rounds = 0;
        for (int round = 0; round < 200; round++) {
            int slices = 1 + random.nextInt(16);
            int length = 1 + random.nextInt(40);
            float[][] p = partials(random, slices, length);
            SliceTree tree = new SliceTree(slices);
            float[] whole = tree.sum(new SliceTree.Range(0, slices), s -> p[s]);
            for (int k = 1; k <= slices; k++) {
                List<SliceTree.Range> shards = tree.cut(k);
                List<float[]> sent = new ArrayList<>();
                for (SliceTree.Range r : shards) {
                    sent.add(tree.sum(r, s -> p[s]));
                }
                for (int order = 0; order < 6; order++) {
                    List<Integer> arrival = new ArrayList<>();
                    for (int i = 0; i < k; i++) {
                        arrival.add(i);
                    }
                    Collections.shuffle(arrival, random);
                    SliceTree.Merge merge = tree.merge(shards, length);
                    arrival.forEach(i -> merge.add(i, sent.get(i)));
                    assertThat(merge.result()).as("%d slices in %d shards %s, arrival %s", slices, k, shards, arrival)
                            .usingElementComparator(SliceTreeTest::bits).containsExactly(whole);
                    // Adding the shards' partials as they arrive would not give these bits in general.
                    float[] asArrived = new float[length];
                    arrival.forEach(i -> {
                        for (int j = 0; j < length; j++) {
                            asArrived[j] += sent.get(i)[j];
                        }
                    });
                    rounds++;
                    for (int j = 0; j < length; j++) {
                        if (Float.floatToIntBits(asArrived[j]) != Float.floatToIntBits(whole[j])) {
                            orderChanged++;
                            break;
                        }
                    }
                }
            }
        }
        assertThat(orderChanged).as("merges of %d where arrival-order sums differ", rounds).isGreaterThan(rounds / 4);
    }

    private static int bits(Float a, Float b) {
        return Integer.compare(Float.floatToIntBits(a), Float.floatToIntBits(b));
    }

    @Test
    void aCutIsSubtreesCoveringTheSlicesInOrderAsEvenlyAsTheTreeAllows() {
        Random random = new Random(7);
        for (int round = 0; round < 300; round++) {
            int slices = 1 + random.nextInt(64);
            SliceTree tree = new SliceTree(slices);
            int k = 1 + random.nextInt(slices);
            List<SliceTree.Range> shards = tree.cut(k);
            assertThat(shards).hasSize(k);
            int next = 0;
            for (SliceTree.Range r : shards) {
                assertThat(r.first()).isEqualTo(next);
                assertThat(tree.isSubtree(r)).as("%s of %d", r, slices).isTrue();
                next = r.end();
            }
            assertThat(next).isEqualTo(slices);
            int max = shards.stream().mapToInt(SliceTree.Range::size).max().orElseThrow();
            int min = shards.stream().mapToInt(SliceTree.Range::size).min().orElseThrow();
            // halving the largest each time keeps the sizes within a factor of two plus one
            assertThat(max).isLessThanOrEqualTo(2 * min + 1);
        }
        assertThat(new SliceTree(8).cut(3)).containsExactly(new SliceTree.Range(0, 2), new SliceTree.Range(2, 4),
                new SliceTree.Range(4, 8));
        assertThat(new SliceTree(5).cut(2)).containsExactly(new SliceTree.Range(0, 3), new SliceTree.Range(3, 5));
    }

    @Test
    void refusesShardsThatAreNotSubtreesOrDoNotCoverTheSlices() {
        SliceTree tree = new SliceTree(4);
        assertThat(tree.isSubtree(new SliceTree.Range(1, 3))).isFalse();
        assertThatThrownBy(() -> tree.merge(List.of(new SliceTree.Range(0, 1), new SliceTree.Range(1, 3),
                new SliceTree.Range(3, 4)), 2)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("subtree");
        assertThatThrownBy(() -> tree.merge(List.of(new SliceTree.Range(0, 2)), 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cover");
        assertThatThrownBy(() -> tree.cut(5)).isInstanceOf(IllegalArgumentException.class);
        SliceTree.Merge merge = tree.merge(tree.cut(2), 2);
        merge.add(0, new float[2]);
        assertThatThrownBy(merge::result).isInstanceOf(IllegalStateException.class).hasMessageContaining("waits");
        assertThatThrownBy(() -> merge.add(0, new float[2])).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> merge.add(1, new float[3])).isInstanceOf(IllegalArgumentException.class);
    }
}
