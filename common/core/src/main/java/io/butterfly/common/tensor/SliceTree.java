package io.butterfly.common.tensor;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * The fixed reduction tree over the slices of a head-parallel layer (docs/sharding.md, "Head parallelism"): a layer's
 * attention heads (and the matching MLP columns) are cut into {@code slices} slices, whose partial outputs are summed by
 * one binary tree over the slice indices, shaped as {@link ReductionTree}'s (a range split with the larger half on the
 * left). Workers hold whole subtrees ({@link #cut(int)}): each sums its slices by its subtree and sends that one
 * partial, and the merge adds the workers' partials by the tree's upper part. Every sum the tree takes is the same
 * whatever the number of workers and whichever answers first, so 1, 2 or k workers give the same bits.
 */
public final class SliceTree {

    /** Slices {@code [first, end)}: one subtree of the tree. */
    public record Range(int first, int end) {
        public int size() {
            return end - first;
        }
    }

    private final int slices;

    /** @param slices the layer's slices (at least one) */
    public SliceTree(int slices) {
        if (slices < 1) {
            throw new IllegalArgumentException("a slice tree needs at least one slice, got " + slices);
        }
        this.slices = slices;
    }

    public int slices() {
        return slices;
    }

    /** The split point of the subtree {@code [lo, hi)} (two leaves or more): its left half is {@code [lo, mid)}. */
    private static int mid(int lo, int hi) {
        return lo + (hi - lo + 1) / 2;
    }

    /**
     * The slices of {@code shards} workers, in slice order: {@code shards} subtrees covering every slice, got by
     * splitting the largest subtree (the first of equal ones) into its halves until there are as many.
     */
    public List<Range> cut(int shards) {
        if (shards < 1 || shards > slices) {
            throw new IllegalArgumentException("cannot cut " + slices + " slices into " + shards + " shards");
        }
        List<Range> ranges = new ArrayList<>(List.of(new Range(0, slices)));
        while (ranges.size() < shards) {
            int largest = 0;
            for (int i = 1; i < ranges.size(); i++) {
                if (ranges.get(i).size() > ranges.get(largest).size()) {
                    largest = i;
                }
            }
            Range r = ranges.remove(largest);
            int mid = mid(r.first(), r.end());
            ranges.add(largest, new Range(mid, r.end()));
            ranges.add(largest, new Range(r.first(), mid));
        }
        return List.copyOf(ranges);
    }

    /** Whether {@code range} is a subtree of the tree. */
    public boolean isSubtree(Range range) {
        int lo = 0;
        int hi = slices;
        while (true) {
            if (lo == range.first() && hi == range.end()) {
                return true;
            }
            if (hi - lo < 2) {
                return false;
            }
            int mid = mid(lo, hi);
            if (range.end() <= mid) {
                hi = mid;
            } else if (range.first() >= mid) {
                lo = mid;
            } else {
                return false;
            }
        }
    }

    /**
     * A subtree's sum of its slices' partials, by the tree: what a worker holding {@code range} sends.
     *
     * @param partial the partial output of slice i (length elements each)
     */
    public float[] sum(Range range, IntFunction<float[]> partial) {
        requireSubtree(range);
        return sum(range.first(), range.end(), partial);
    }

    private static float[] sum(int lo, int hi, IntFunction<float[]> partial) {
        if (hi - lo == 1) {
            return partial.apply(lo).clone();
        }
        int mid = mid(lo, hi);
        return plus(sum(lo, mid, partial), sum(mid, hi, partial));
    }

    private static float[] plus(float[] a, float[] b) {
        if (a.length != b.length) {
            throw new IllegalArgumentException("partials of " + a.length + " and " + b.length + " values");
        }
        float[] s = new float[a.length];
        for (int i = 0; i < s.length; i++) {
            s[i] = a[i] + b[i];
        }
        return s;
    }

    private void requireSubtree(Range range) {
        if (range.first() < 0 || range.end() > slices || range.size() < 1 || !isSubtree(range)) {
            throw new IllegalArgumentException("slices " + range + " are not a subtree of the tree over " + slices);
        }
    }

    /** A merge of the partials of {@code shards} (subtrees covering every slice, in order), taken in any order. */
    public Merge merge(List<Range> shards, int length) {
        return new Merge(shards, length);
    }

    /** One merge in progress: each shard's subtree sum is added once; the root's sum is there when all have been. */
    public final class Merge {
        private final List<Range> shards;
        private final int length;
        private final Map<Range, float[]> known = new HashMap<>();
        private int pending;

        private Merge(List<Range> shards, int length) {
            this.shards = List.copyOf(shards);
            this.length = length;
            int next = 0;
            for (Range r : this.shards) {
                requireSubtree(r);
                if (r.first() != next) {
                    throw new IllegalArgumentException("shards " + shards + " do not cover slices [0, " + slices
                            + ") in order");
                }
                next = r.end();
            }
            if (next != slices) {
                throw new IllegalArgumentException("shards " + shards + " do not cover slices [0, " + slices + ")");
            }
            pending = this.shards.size();
        }

        /** Takes shard {@code index}'s subtree sum, merging every subtree it completes. */
        public synchronized void add(int index, float[] partial) {
            Range r = shards.get(index);
            if (known.containsKey(r)) {
                throw new IllegalStateException("shard " + index + " " + r + " already contributed");
            }
            if (partial.length != length) {
                throw new IllegalArgumentException("shard " + index + " sent " + partial.length + " values, expected "
                        + length);
            }
            known.put(r, partial.clone());
            pending--;
            // Up the tree from the shard: a parent is summed as soon as both of its halves are known.
            for (Range node = r, parent = parentOf(node); parent != null; node = parent, parent = parentOf(node)) {
                int mid = mid(parent.first(), parent.end());
                float[] left = known.get(new Range(parent.first(), mid));
                float[] right = known.get(new Range(mid, parent.end()));
                if (left == null || right == null) {
                    break;
                }
                known.put(parent, plus(left, right));
            }
        }

        /** The merged layer output: the sum of every slice's partial by the tree. */
        public synchronized float[] result() {
            if (pending > 0) {
                throw new IllegalStateException("the merge still waits for " + pending + " of " + shards.size()
                        + " shards");
            }
            return known.get(new Range(0, slices)).clone();
        }

        private Range parentOf(Range r) {
            int lo = 0;
            int hi = slices;
            Range parent = null;
            while (!(lo == r.first() && hi == r.end())) {
                parent = new Range(lo, hi);
                int mid = mid(lo, hi);
                if (r.end() <= mid) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            return parent;
        }
    }
}
