package io.butterfly.common.gguf;

import io.butterfly.common.quant.GgmlType;
import java.util.Arrays;

/**
 * One tensor of a GGUF file.
 *
 * @param name   as the file names it (llama.cpp's names, e.g. {@code blk.0.attn_q.weight})
 * @param type   its ggml type
 * @param dims   ggml's {@code ne}: the innermost (contiguous) dimension first, so a {@code [out, in]} matrix is
 *               {@code [in, out]} here
 * @param offset where its bytes start, from the start of the file
 * @param bytes  how many bytes it takes
 */
public record GgufTensor(String name, GgmlType type, long[] dims, long offset, long bytes) {

    /** Values in one row (the innermost dimension). */
    public long columns() {
        return dims[0];
    }

    /** Rows: the product of the outer dimensions (1 for a vector). */
    public long rows() {
        long r = 1;
        for (int i = 1; i < dims.length; i++) {
            r *= dims[i];
        }
        return r;
    }

    public long numElements() {
        return columns() * rows();
    }

    /** Bytes of one row. */
    public long rowBytes() {
        return type.rowBytes(columns());
    }

    /** The shape as PyTorch and safetensors write it: outermost dimension first. */
    public long[] shape() {
        long[] s = new long[dims.length];
        for (int i = 0; i < dims.length; i++) {
            s[i] = dims[dims.length - 1 - i];
        }
        return s;
    }

    @Override
    public String toString() {
        return name + " " + type + Arrays.toString(shape());
    }
}
