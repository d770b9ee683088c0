package io.butterfly.worker.execution;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.TensorInfo;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Tensors by Hugging Face name across one or more safetensors files, loaded one at a time as float32
 * NDArrays.
 *
 * <p>Why not DJL's decoder ({@code NDList.decode}): it reads a file's whole data section into one
 * {@code byte[]} (int offsets, so at most 2 GiB) and creates every tensor, so a stage given the whole
 * {@code model.safetensors} would hold every layer, and it aborts the JVM on BF16. Here each needed
 * tensor's bytes are read alone through {@link SafetensorsFile}, widened exactly to float32 in Java
 * (F16 and BF16), staged in one reused direct buffer and copied into engine-owned memory.
 */
final class WeightStore implements AutoCloseable {

    private final List<SafetensorsFile> files = new ArrayList<>();
    private final Map<String, SafetensorsFile> byName = new HashMap<>();
    private final NDManager manager;
    private ByteBuffer staging = ByteBuffer.allocateDirect(0);
    private long bytesLoaded;

    private WeightStore(NDManager manager) {
        this.manager = manager;
    }

    static WeightStore open(List<Path> paths, NDManager manager) throws IOException {
        if (paths.isEmpty()) {
            throw new IllegalArgumentException("no safetensors files given");
        }
        WeightStore store = new WeightStore(manager);
        try {
            for (Path p : paths) {
                SafetensorsFile f = SafetensorsFile.open(p);
                store.files.add(f);
                for (String name : f.tensors().keySet()) {
                    SafetensorsFile previous = store.byName.putIfAbsent(name, f);
                    // A tied head ships its own copy of the embedding: identical copies are one tensor.
                    if (previous != null && !sameTensor(previous, f, name)) {
                        throw new IllegalArgumentException("tensor '" + name + "' is in both " + previous.path() + " and " + p);
                    }
                }
            }
            return store;
        } catch (IOException | RuntimeException e) {
            store.close();
            throw e;
        }
    }

    boolean has(String name) {
        return byName.containsKey(name);
    }

    /** The first of the names present, or a failure naming all of them. */
    String firstPresent(String... names) {
        for (String n : names) {
            if (has(n)) {
                return n;
            }
        }
        throw new IllegalArgumentException("weights are missing tensor " + String.join(" / ", names));
    }

    long[] shape(String name) {
        return info(name).shape();
    }

    /** Loads a tensor as float32 on the manager's device, checking its shape. */
    NDArray load(String name, long... expectedShape) {
        return toArray(readFloats(name, expectedShape), expectedShape);
    }

    /**
     * Loads a 2-D tensor stored {@code [rows, cols]} as {@code [cols, rows]} (contiguous), e.g. a
     * Hugging Face {@code [out, in]} projection as the {@code [in, out]} layout {@link Projection} wants.
     */
    NDArray loadTransposed(String name, long rows, long cols) {
        float[] stored = readFloats(name, rows, cols);
        float[] t = new float[stored.length];
        int r0 = (int) rows;
        int c0 = (int) cols;
        // Blocked so both sides stay in cache for large matrices (the LM head).
        int block = 64;
        for (int rb = 0; rb < r0; rb += block) {
            for (int cb = 0; cb < c0; cb += block) {
                int rEnd = Math.min(r0, rb + block);
                int cEnd = Math.min(c0, cb + block);
                for (int r = rb; r < rEnd; r++) {
                    for (int c = cb; c < cEnd; c++) {
                        t[c * r0 + r] = stored[r * c0 + c];
                    }
                }
            }
        }
        return toArray(t, cols, rows);
    }

    private float[] readFloats(String name, long... expectedShape) {
        TensorInfo info = info(name);
        if (!Arrays.equals(info.shape(), expectedShape)) {
            throw new IllegalArgumentException("tensor '" + name + "' has shape " + Arrays.toString(info.shape())
                    + " but the model config implies " + Arrays.toString(expectedShape));
        }
        try {
            return byName.get(name).readFloats(name);
        } catch (IOException e) {
            throw new UncheckedIOException("reading '" + name + "'", e);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("tensor '" + name + "' has dtype " + info.dtype()
                    + "; only F32, F16 and BF16 weights are supported", e);
        }
    }

    private NDArray toArray(float[] values, long... shape) {
        int bytes = values.length * Float.BYTES;
        if (staging.capacity() < bytes) {
            staging = ByteBuffer.allocateDirect(bytes);
        }
        ByteBuffer buf = staging.clear().limit(bytes).slice().order(ByteOrder.nativeOrder());
        buf.asFloatBuffer().put(values);
        bytesLoaded += bytes;
        // A direct buffer is shared, not copied, by the engine: copy into engine memory before reusing it.
        try (NDArray shared = manager.create(buf, new Shape(shape), DataType.FLOAT32)) {
            return shared.duplicate();
        }
    }

    /** Loads a tensor if present, else null. */
    NDArray loadOptional(String name, long... expectedShape) {
        return has(name) ? load(name, expectedShape) : null;
    }

    long bytesLoaded() {
        return bytesLoaded;
    }

    private TensorInfo info(String name) {
        SafetensorsFile f = byName.get(name);
        if (f == null) {
            throw new IllegalArgumentException("weights are missing tensor '" + name + "'");
        }
        return f.info(name);
    }

    @Override
    public void close() throws IOException {
        IOException first = null;
        for (SafetensorsFile f : files) {
            try {
                f.close();
            } catch (IOException e) {
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
    }

    private static boolean sameTensor(SafetensorsFile a, SafetensorsFile b, String name) throws IOException {
        var ta = a.tensors().get(name);
        var tb = b.tensors().get(name);
        return ta.dtype().equals(tb.dtype()) && java.util.Arrays.equals(ta.shape(), tb.shape())
                && a.rawBytes(name).equals(b.rawBytes(name));
    }
}
