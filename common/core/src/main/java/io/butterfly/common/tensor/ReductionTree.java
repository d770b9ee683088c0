package io.butterfly.common.tensor;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Merges partial float32 results of several nodes by one fixed binary tree over their ordered ids
 * (docs/sharding.md, "The reduction tree"): the leaves are the nodes in the given order, a range of leaves is split
 * with the larger half on the left, and each inner node adds its left subtree's sum and its right one's, element by
 * element in float32. Which node answers first changes when a sum is taken (a subtree is merged as soon as both halves
 * are in), never which sums are taken, so the result is the same bits whatever the arrival order.
 *
 * <p>A node may contribute nothing ({@code null}): it then is the identity of its parent's addition, not a zero (adding
 * a +0 would turn a -0 into +0). With three leaves or fewer the tree is {@code ((a + b) + c)}, the order a loop adding
 * the partials one after another takes.
 */
public final class ReductionTree {

    private final List<String> ids;
    private final Map<String, Integer> leafOf = new HashMap<>();
    /** Tree nodes, leaves first in id order; parent[n] is -1 for the root. */
    private final int[] parent;
    private final int[] left;
    private final int[] right;
    private final int root;

    /** @param orderedIds the contributing nodes in the tree's order (at least one, no repeats) */
    public ReductionTree(List<String> orderedIds) {
        ids = List.copyOf(orderedIds);
        if (ids.isEmpty()) {
            throw new IllegalArgumentException("a reduction tree needs at least one node");
        }
        for (int i = 0; i < ids.size(); i++) {
            if (leafOf.put(Objects.requireNonNull(ids.get(i), "node id"), i) != null) {
                throw new IllegalArgumentException("node " + ids.get(i) + " appears twice in the reduction tree");
            }
        }
        int n = ids.size();
        parent = new int[2 * n - 1];
        left = new int[2 * n - 1];
        right = new int[2 * n - 1];
        java.util.Arrays.fill(left, -1);
        java.util.Arrays.fill(right, -1);
        int[] next = {n};
        root = build(0, n, next);
        parent[root] = -1;
    }

    /** Builds the subtree over leaves [lo, hi), returning its node. */
    private int build(int lo, int hi, int[] next) {
        if (hi - lo == 1) {
            return lo;
        }
        int mid = lo + (hi - lo + 1) / 2;
        int l = build(lo, mid, next);
        int r = build(mid, hi, next);
        int node = next[0]++;
        left[node] = l;
        right[node] = r;
        parent[l] = node;
        parent[r] = node;
        return node;
    }

    /** The contributing nodes in the tree's order. */
    public List<String> nodes() {
        return ids;
    }

    /** The tree's shape, leaves by id: {@code ((a + b) + c)}. */
    public String shape() {
        return shape(root);
    }

    private String shape(int node) {
        return left[node] < 0 ? ids.get(node) : "(" + shape(left[node]) + " + " + shape(right[node]) + ")";
    }

    /** A merge of one set of partial results, taking them in any order. */
    public Reduction start(int length) {
        return new Reduction(length);
    }

    /** Merges the partials at once: {@code partials} by node id, a missing or null one contributing nothing. */
    public float[] reduce(Map<String, float[]> partials, int length) {
        Reduction r = start(length);
        for (String id : ids) {
            r.add(id, partials.get(id));
        }
        return r.result();
    }

    /** One merge in progress: each node's partial is added once; the result is there when all have been. */
    public final class Reduction {

        private final int length;
        private final float[][] value = new float[parent.length][];
        private final boolean[] done = new boolean[parent.length];
        private int pending = ids.size();

        private Reduction(int length) {
            this.length = length;
        }

        /**
         * Takes {@code partial} (length elements, or null: nothing) as node {@code id}'s contribution, merging every
         * subtree it completes.
         */
        public synchronized void add(String id, float[] partial) {
            Integer leaf = leafOf.get(id);
            if (leaf == null) {
                throw new IllegalArgumentException("node " + id + " is not in the reduction tree " + shape());
            }
            if (done[leaf]) {
                throw new IllegalStateException("node " + id + " already contributed");
            }
            if (partial != null && partial.length != length) {
                throw new IllegalArgumentException("node " + id + " sent " + partial.length + " values, expected " + length);
            }
            value[leaf] = partial;
            done[leaf] = true;
            pending--;
            for (int node = parent[leaf]; node >= 0 && done[left[node]] && done[right[node]]; node = parent[node]) {
                value[node] = merge(value[left[node]], value[right[node]]);
                done[node] = true;
                value[left[node]] = null;
                value[right[node]] = null;
            }
        }

        /** Whether every node contributed. */
        public synchronized boolean complete() {
            return pending == 0;
        }

        /** The merged result (zeros when no node contributed anything). */
        public synchronized float[] result() {
            if (pending > 0) {
                List<String> missing = new ArrayList<>();
                for (int i = 0; i < ids.size(); i++) {
                    if (!done[i]) {
                        missing.add(ids.get(i));
                    }
                }
                throw new IllegalStateException("the reduction still waits for " + missing);
            }
            return value[root] == null ? new float[length] : value[root];
        }

        private float[] merge(float[] a, float[] b) {
            if (a == null || b == null) {
                return a == null ? b : a;
            }
            float[] sum = new float[length];
            for (int i = 0; i < length; i++) {
                sum[i] = a[i] + b[i];
            }
            return sum;
        }
    }
}
