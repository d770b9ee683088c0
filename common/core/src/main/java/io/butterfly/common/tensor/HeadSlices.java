package io.butterfly.common.tensor;

/**
 * How a Llama-family layer is cut into slices for head parallelism (docs/sharding.md, "Head parallelism"): one slice
 * per key/value head, holding that head's query heads (grouped-query attention keeps a group whole) and an even share
 * of the MLP's intermediate columns (the first slices one more when they do not divide). A slice's partial output is
 * its heads' attention through its columns of {@code o_proj}, or its MLP columns through its columns of
 * {@code down_proj}; the layer's output is the sum of the slices' partials, taken by a {@link SliceTree}.
 *
 * @param heads        query heads
 * @param kvHeads      key/value heads: the slices
 * @param headDim      a head's width
 * @param intermediate the MLP's width
 */
public record HeadSlices(int heads, int kvHeads, int headDim, int intermediate) {

    public HeadSlices {
        if (heads < 1 || kvHeads < 1 || heads % kvHeads != 0 || headDim < 1 || intermediate < kvHeads) {
            throw new IllegalArgumentException("cannot slice " + heads + " heads over " + kvHeads + " key/value heads"
                    + " of width " + headDim + " with an MLP of " + intermediate);
        }
    }

    public int slices() {
        return kvHeads;
    }

    /** Rows {@code [first, end)} of {@code q_proj} (and columns of {@code o_proj}) slice {@code s} holds. */
    public SliceTree.Range queryRows(int s) {
        int width = heads / kvHeads * headDim;
        return new SliceTree.Range(check(s) * width, (s + 1) * width);
    }

    /** Rows of {@code k_proj} and {@code v_proj} slice {@code s} holds: its key/value head. */
    public SliceTree.Range keyRows(int s) {
        return new SliceTree.Range(check(s) * headDim, (s + 1) * headDim);
    }

    /** Rows of {@code gate_proj} and {@code up_proj} (and columns of {@code down_proj}) slice {@code s} holds. */
    public SliceTree.Range mlpRows(int s) {
        int base = intermediate / kvHeads;
        int extra = intermediate % kvHeads;
        int first = check(s) * base + Math.min(s, extra);
        return new SliceTree.Range(first, first + base + (s < extra ? 1 : 0));
    }

    /** Query heads {@code [first, end)} of slice {@code s}. */
    public SliceTree.Range queryHeads(int s) {
        int group = heads / kvHeads;
        return new SliceTree.Range(check(s) * group, (s + 1) * group);
    }

    private int check(int s) {
        if (s < 0 || s >= kvHeads) {
            throw new IllegalArgumentException("slice " + s + " of " + kvHeads);
        }
        return s;
    }
}
