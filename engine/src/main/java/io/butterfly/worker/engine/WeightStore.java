package io.butterfly.worker.engine;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.butterfly.common.quant.GgmlQuants;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.quant.QuantizedTensors;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.TensorInfo;
import io.butterfly.worker.engine.cpu.NativeKernels;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Tensors by Hugging Face name across one or more safetensors files, loaded one at a time as float32
 * NDArrays, or as their stored bytes (ggml blocks, see {@link QuantizedTensors}) for stages that compute on them.
 *
 * <p>Why not DJL's decoder ({@code NDList.decode}): it reads a file's whole data section into one
 * {@code byte[]} (int offsets, so at most 2 GiB) and creates every tensor, so a stage given the whole
 * {@code model.safetensors} would hold every layer, and it aborts the JVM on BF16. Here each needed
 * tensor's bytes are read alone through {@link SafetensorsFile} (F32 as they are, F16 and BF16 widened
 * exactly to float32 in Java): on the host straight into the memory of an uninitialised engine tensor, or,
 * for a tensor the engine transposes (and on a GPU), into one reused staging buffer first.
 */
final class WeightStore implements AutoCloseable {

    private final List<SafetensorsFile> files = new ArrayList<>();
    private final Map<String, SafetensorsFile> byName = new HashMap<>();
    /**
     * {@code -Dbutterfly.worker.map-weights=false} copies every tensor into fresh engine memory as before mapping was
     * used (to compare the two: {@code BUTTERFLY_JVM_OPTS}).
     */
    static final String MAP_PROPERTY = "butterfly.worker.map-weights";

    private final NDManager manager;
    /** The largest tensor {@link #mappedView mapped} rather than copied (Java maps at most 2 GiB at once). */
    private final long mappableBytes;
    /**
     * Whether the engine keeps tensors in host memory, where Java can write into them directly. A cold load
     * then skips a copy per tensor, and the staging memory is the engine's (Java zero-fills a direct buffer:
     * 15% of a worker's CPU during a cold bootstrap when it staged the 98 MB embedding).
     */
    private final boolean hostMemory;
    /** Where a tensor's float32 values are staged for the engine (reused: tensors are loaded one at a time). */
    private ByteBuffer staging = ByteBuffer.allocateDirect(0);
    /** On the host, the engine tensor whose memory {@link #staging} is; null otherwise. */
    private NDArray stagingArray;
    private long bytesLoaded;
    /** The file pages each {@link #mappedView} is over, until {@link #releasePages released}. */
    private final Map<NDArray, ByteBuffer> mappedPages = new IdentityHashMap<>();

    private WeightStore(NDManager manager, long mappableBytes) {
        this.manager = manager;
        this.mappableBytes = mappableBytes;
        this.hostMemory = Device.cpu().equals(manager.getDevice());
    }

    /**
     * Over safetensors files already open (e.g. through the channels their checksums were verified through). The
     * store owns them from here: closing it, or failing here, closes them.
     */
    static WeightStore open(List<SafetensorsFile> opened, NDManager manager) throws IOException {
        return open(opened, manager, Boolean.parseBoolean(System.getProperty(MAP_PROPERTY, "true")) ? Integer.MAX_VALUE : 0);
    }

    /** As {@link #open(List, NDManager)}, mapping no tensor over {@code mappableBytes} (tests shrink it). */
    static WeightStore open(List<SafetensorsFile> opened, NDManager manager, long mappableBytes) throws IOException {
        WeightStore store = new WeightStore(manager, mappableBytes);
        store.files.addAll(opened);
        try {
            if (opened.isEmpty()) {
                throw new IllegalArgumentException("no safetensors files given");
            }
            for (SafetensorsFile f : opened) {
                Path p = f.path();
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

    /** The tensor's shape as values ({@code [rows, columns]} for ggml blocks). */
    long[] shape(String name) {
        return QuantizedTensors.logicalShape(byName.get(name), name);
    }

    /** The tensor's type as stored: F32, F16, BF16, or a ggml block type. */
    GgmlType storedType(String name) {
        info(name);
        return QuantizedTensors.storedType(byName.get(name), name);
    }

    /** Whether any of the named tensors is stored in ggml blocks. */
    boolean anyQuantized() {
        return byName.entrySet().stream().anyMatch(e -> QuantizedTensors.blockType(e.getValue(), e.getKey()).isPresent());
    }

    /**
     * The tensor's stored bytes, as they are, in a uint8 array of the manager's (the kernels of quantized stages read
     * ggml's blocks in place), checking its shape as values.
     */
    NDArray loadBytes(String name, long... expectedShape) {
        TensorInfo info = checkShape(name, expectedShape);
        NDArray mapped = mappedView(new String[]{name}, new Shape(info.byteLength()), DataType.UINT8);
        if (mapped != null) {
            return mapped;
        }
        NDArray array = manager.create(new Shape(info.byteLength()), DataType.UINT8); // uninitialised
        try {
            ByteBuffer memory = hostMemory ? memoryOf(array) : null;
            if (memory == null) {
                throw new IllegalStateException("stored bytes are loaded into host memory only");
            }
            byName.get(name).readInto(name, memory);
        } catch (IOException e) {
            array.close();
            throw new UncheckedIOException("reading '" + name + "'", e);
        } catch (RuntimeException e) {
            array.close();
            throw e;
        }
        bytesLoaded += info.byteLength();
        return array;
    }

    /** Loads a tensor as float32 on the manager's device, checking its shape. */
    NDArray load(String name, long... expectedShape) {
        if (!hostMemory) {
            int count = reserve(name, expectedShape);
            stageAt(name, 0, expectedShape);
            return toArray(count, expectedShape);
        }
        int count = floatCount(name, expectedShape);
        checkShape(name, expectedShape);
        if (storedAsIs(name)) {
            NDArray mapped = mappedView(new String[]{name}, new Shape(expectedShape), DataType.FLOAT32);
            if (mapped != null) {
                return mapped;
            }
        }
        NDArray array = manager.create(new Shape(expectedShape), DataType.FLOAT32); // uninitialised
        try {
            read(name, memoryOf(array));
        } catch (RuntimeException e) {
            array.close();
            throw e;
        }
        bytesLoaded += (long) count * Float.BYTES;
        return array;
    }

    /**
     * Loads 2-D tensors stored {@code [rows_i, cols]} as one {@code [sum(rows_i), cols]} matrix, one below the other:
     * projections that share an input (q/k/v, gate/up) fused, as {@code [out, in]}. On the host each tensor is read
     * straight into its rows of the engine tensor.
     */
    NDArray loadStacked(String[] names, long[] rows, long cols) {
        if (names.length == 0 || names.length != rows.length) {
            throw new IllegalArgumentException(names.length + " tensor names for " + rows.length + " row counts");
        }
        long totalRows = 0;
        for (long r : rows) {
            totalRows += r;
        }
        if (!hostMemory) {
            int count = reserve(String.join(" + ", names), totalRows, cols);
            long offset = 0;
            for (int i = 0; i < names.length; i++) {
                stageAt(names[i], offset, rows[i], cols);
                offset += rows[i] * cols;
            }
            return toArray(count, totalRows, cols);
        }
        int count = floatCount(String.join(" + ", names), totalRows, cols);
        for (int i = 0; i < names.length; i++) {
            checkShape(names[i], rows[i], cols);
        }
        if (Arrays.stream(names).allMatch(this::storedAsIs)) {
            NDArray mapped = mappedView(names, new Shape(totalRows, cols), DataType.FLOAT32);
            if (mapped != null) {
                return mapped;
            }
        }
        NDArray array = manager.create(new Shape(totalRows, cols), DataType.FLOAT32); // uninitialised
        try {
            ByteBuffer memory = memoryOf(array);
            int from = 0;
            for (int i = 0; i < names.length; i++) {
                int bytes = (int) (rows[i] * cols * Float.BYTES);
                read(names[i], memory.clear().position(from).limit(from + bytes).slice());
                from += bytes;
            }
        } catch (RuntimeException e) {
            array.close();
            throw e;
        }
        bytesLoaded += (long) count * Float.BYTES;
        return array;
    }

    /**
     * Loads a 2-D tensor stored {@code [rows, cols]} as {@code [cols, rows]} (contiguous), e.g. a GPT-2 Conv1D
     * {@code [in, out]} matrix as the {@code [out, in]} a projection takes.
     */
    NDArray loadTransposed(String name, long rows, long cols) {
        if (rows > 1 && cols > 1 && storedAsIs(name)) {
            return transposedFromFile(name, rows, cols);
        }
        int count = reserve(name, rows, cols);
        stageAt(name, 0, rows, cols);
        if (rows == 1 || cols == 1) {
            // A vector's transpose has the same memory order; the engine would return a view of the staging
            // buffer (already contiguous) instead of a copy.
            return toArray(count, cols, rows);
        }
        try (NDArray stored = staged(count, rows, cols)) {
            return transposedCopy(stored);
        }
    }

    /**
     * The engine's contiguous {@code [cols, rows]} copy of a {@code [rows, cols]} matrix (a blocked native copy: a
     * Java loop over every element ran interpreted until the JIT caught up and took about half of a cold load).
     */
    private static NDArray transposedCopy(NDArray stored) {
        long[] shape = stored.getShape().getShape();
        try (NDArray view = stored.transpose(); NDArray flat = view.flatten()) {
            return flat.reshape(shape[1], shape[0]);
        }
    }

    /**
     * Whether the engine can read a tensor where the file holds it: float32 on a little-endian host (the engine's own
     * layout). A transposed load then copies straight from the file's pages, without staging the matrix in fresh
     * memory first (98 MB for a 32000 x 768 head: on a cold start the kernel's zeroing of new pages cost more than
     * the transpose).
     */
    private boolean storedAsIs(String name) {
        return hostMemory && ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN && info(name).dtype().equals("F32");
    }

    /** The engine's contiguous transpose of a float32 matrix {@code [rows, cols]} read in place from its file. */
    private NDArray transposedFromFile(String name, long rows, long cols) {
        checkShape(name, rows, cols);
        floatCount(name, rows, cols);
        ByteBuffer stored;
        try {
            stored = byName.get(name).mappedBytes(name).order(ByteOrder.nativeOrder());
        } catch (IOException e) {
            throw new UncheckedIOException("reading '" + name + "'", e);
        }
        bytesLoaded += stored.remaining();
        // The view shares the mapped pages with the engine (read-only: only the transpose reads them).
        try (NDArray view = manager.create(stored, new Shape(rows, cols), DataType.FLOAT32)) {
            return transposedCopy(view);
        } finally {
            Reference.reachabilityFence(stored); // unmapped only once it is collected: not before the copy is made
        }
    }

    /**
     * The tensors' stored bytes as an engine array over the file's own pages (a read-only mapping: nothing copied, no
     * fresh memory, and the pages hashed a moment ago are already in the page cache), or null when that cannot be:
     * not host memory, the tensors not back to back in one file, over 2 GiB, or not aligned to their element. The
     * engine array holds the mapping (DJL keeps the buffer an array was made from), and the engine only ever reads
     * weights, so it is the stage's memory from here: a stage keeps only what it copies (a reordered projection) or
     * these pages. The registry never writes into a stored file and a worker's downloads are renamed into place, so
     * the verified bytes stay the mapped ones.
     */
    private NDArray mappedView(String[] names, Shape shape, DataType type) {
        SafetensorsFile file = byName.get(names[0]);
        if (!hostMemory || !Arrays.stream(names).allMatch(n -> byName.get(n) == file) || !file.backToBack(names)
                || file.absoluteOffset(names[0]) % type.getNumOfBytes() != 0) {
            return null;
        }
        long length = file.info(names[names.length - 1]).end() - file.info(names[0]).begin();
        if (length > mappableBytes) {
            return null;
        }
        ByteBuffer pages;
        try {
            pages = file.mappedBytes(names).order(ByteOrder.nativeOrder());
        } catch (IOException e) {
            throw new UncheckedIOException("mapping " + String.join(" + ", names), e);
        }
        bytesLoaded += length;
        NDArray view = manager.create(pages, shape, type);
        mappedPages.put(view, pages);
        return view;
    }

    /**
     * Takes the file pages under a {@link #mappedView} out of the worker's resident memory once the engine has made its
     * own copy of them (a projection reordered for oneDNN): they stay in the page cache, shared with the store, but are
     * no longer counted twice in the worker's memory, the copy and the pages it was made from (a 1B's float32 stage of
     * 2.1 GiB peaked at 4.8 GB). The mapping stays valid: a read would fault the pages in again. Not a view: nothing.
     */
    void releasePages(NDArray view) {
        ByteBuffer pages = mappedPages.remove(view);
        if (pages != null && NativeKernels.available()) {
            NativeKernels.releasePages(NativeKernels.address(pages), pages.capacity());
        }
    }

    /** Makes {@link #staging} hold at least the floats of {@code shape}; answers their count. */
    private int reserve(String what, long... shape) {
        int count = floatCount(what, shape);
        int bytes = count * Float.BYTES;
        if (staging.capacity() < bytes) {
            if (hostMemory) {
                NDArray previous = stagingArray;
                stagingArray = manager.create(new Shape(count), DataType.FLOAT32);
                staging = memoryOf(stagingArray);
                if (previous != null) {
                    previous.close();
                }
            } else {
                staging = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
            }
        }
        return count;
    }

    /** The memory of a host tensor, as a buffer that writes into it (not a copy of it). */
    private static ByteBuffer memoryOf(NDArray hostArray) {
        ByteBuffer memory = hostArray.toByteBuffer(true);
        if (!memory.isDirect()) {
            throw new IllegalStateException("the engine gave a copy of a host tensor's memory, not the memory");
        }
        return memory;
    }

    private static int floatCount(String what, long... shape) {
        long count = 1;
        for (long d : shape) {
            count *= d;
        }
        if (count * Float.BYTES > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("tensor '" + what + "' is larger than 2 GiB");
        }
        return (int) count;
    }

    /**
     * Puts the tensor's values as float32 into {@link #staging} from float {@code offset} on (reserved
     * before), checking its shape.
     */
    private void stageAt(String name, long offset, long... expectedShape) {
        checkShape(name, expectedShape);
        int from = (int) offset * Float.BYTES;
        int bytes = Math.toIntExact(Arrays.stream(expectedShape).reduce(1L, Math::multiplyExact) * Float.BYTES);
        read(name, staging.clear().position(from).limit(from + bytes).slice());
    }

    private TensorInfo checkShape(String name, long... expectedShape) {
        TensorInfo info = info(name);
        long[] shape = shape(name);
        if (!Arrays.equals(shape, expectedShape)) {
            throw new IllegalArgumentException("tensor '" + name + "' has shape " + Arrays.toString(shape)
                    + " but the model config implies " + Arrays.toString(expectedShape));
        }
        return info;
    }

    /**
     * Fills {@code target} (exactly the tensor's float32 bytes long) with the tensor's values: F32 bytes are
     * read straight into it (no Java copy on a little-endian machine), F16 and BF16 are widened exactly.
     */
    private void read(String name, ByteBuffer target) {
        TensorInfo info = info(name);
        ByteBuffer buf = target.order(ByteOrder.nativeOrder());
        try {
            GgmlType type = storedType(name);
            if (type.quantized()) {
                dequantizeInto(name, type, buf);
            } else if (info.dtype().equals("F32") && ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN) {
                byName.get(name).readInto(name, buf);
            } else {
                widenInto(name, info, buf);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading '" + name + "'", e);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("tensor '" + name + "' has dtype " + info.dtype()
                    + "; only F32, F16 and BF16 weights are supported", e);
        }
    }

    /**
     * F16 or BF16 values widened to float32 in one pass from the file's mapped pages into the engine's memory: no heap
     * array between them (a 1B model in BF16 spent 29-33 s of a cold load per worker in the chunked widening below,
     * which stages each chunk on the heap twice). Where the tensor cannot be mapped, a few megabytes at a time.
     */
    private void widenInto(String name, TensorInfo info, ByteBuffer target) throws IOException {
        if (info.byteLength() <= mappableBytes) {
            ByteBuffer halves = byName.get(name).mappedBytes(name).order(ByteOrder.LITTLE_ENDIAN);
            ByteBuffer floats = target.order(ByteOrder.nativeOrder());
            int n = halves.remaining() / 2;
            int at = floats.position();
            if (info.dtype().equals("BF16")) {
                for (int i = 0; i < n; i++) {
                    floats.putInt(at + 4 * i, (halves.getShort(2 * i) & 0xFFFF) << 16); // bfloat16: a float's upper half
                }
            } else {
                for (int i = 0; i < n; i++) {
                    floats.putFloat(at + 4 * i, io.butterfly.common.safetensors.FloatWidening.halfToFloat(halves.getShort(2 * i)));
                }
            }
            floats.position(at + 4 * n);
            Reference.reachabilityFence(halves);
            return;
        }
        widenInChunks(name, info, target);
    }

    /** F16 or BF16 values widened to float32 a few megabytes at a time (a tensor may be larger than the heap). */
    private void widenInChunks(String name, TensorInfo info, ByteBuffer target) throws IOException {
        int element = TensorInfo.elementSize(info.dtype());
        int chunk = (4 << 20) / element * element;
        ByteBuffer bytes = ByteBuffer.allocate((int) Math.min(chunk, Math.max(element, info.byteLength())))
                .order(ByteOrder.LITTLE_ENDIAN);
        java.nio.FloatBuffer out = target.asFloatBuffer();
        for (long at = 0; at < info.byteLength(); at += bytes.capacity()) {
            bytes.clear().limit((int) Math.min(bytes.capacity(), info.byteLength() - at));
            byName.get(name).readRange(name, at, bytes);
            out.put(io.butterfly.common.safetensors.FloatWidening.toFloat32(info.dtype(), bytes.flip()));
        }
        target.position(target.position() + out.position() * Float.BYTES);
    }

    /**
     * A tensor of ggml blocks as float32 values (the float32 stages' reference math on its dequantized weights), row
     * by row through a small buffer.
     */
    private void dequantizeInto(String name, GgmlType type, ByteBuffer target) throws IOException {
        long[] shape = shape(name);
        int cols = (int) shape[1];
        int rowBytes = (int) type.rowBytes(cols);
        int rowsPerRead = Math.max(1, (1 << 20) / rowBytes);
        ByteBuffer bytes = ByteBuffer.allocate(rowsPerRead * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        float[] row = new float[cols];
        java.nio.FloatBuffer out = target.asFloatBuffer();
        SafetensorsFile file = byName.get(name);
        for (long r = 0; r < shape[0]; r += rowsPerRead) {
            int n = (int) Math.min(rowsPerRead, shape[0] - r);
            bytes.clear().limit(n * rowBytes);
            file.readRange(name, r * rowBytes, bytes);
            bytes.flip();
            for (int i = 0; i < n; i++) {
                GgmlQuants.dequantize(type, bytes, row, 0, cols);
                out.put(row);
            }
        }
        target.position(target.position() + out.position() * Float.BYTES);
    }

    /** An engine-owned copy of the first {@code count} floats staged in {@link #staging}. */
    private NDArray toArray(int count, long... shape) {
        // A direct buffer is shared, not copied, by the engine: copy into engine memory before reusing it.
        try (NDArray shared = staged(count, shape)) {
            return shared.duplicate();
        }
    }

    /** The first {@code count} floats staged in {@link #staging}, shared with the engine (not copied). */
    private NDArray staged(int count, long... shape) {
        int bytes = count * Float.BYTES;
        ByteBuffer buf = staging.clear().limit(bytes).slice().order(ByteOrder.nativeOrder());
        bytesLoaded += bytes;
        return manager.create(buf, new Shape(shape), DataType.FLOAT32);
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
        mappedPages.clear();
        if (stagingArray != null) {
            stagingArray.close();
            stagingArray = null;
        }
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
        if (!ta.dtype().equals(tb.dtype()) || !java.util.Arrays.equals(ta.shape(), tb.shape())) {
            return false;
        }
        // Compared a few megabytes at a time: the copy is an embedding, which can be larger than the heap.
        int chunk = (int) Math.min(4 << 20, Math.max(1, ta.byteLength()));
        ByteBuffer x = ByteBuffer.allocate(chunk);
        ByteBuffer y = ByteBuffer.allocate(chunk);
        for (long at = 0; at < ta.byteLength(); at += chunk) {
            int n = (int) Math.min(chunk, ta.byteLength() - at);
            x.clear().limit(n);
            y.clear().limit(n);
            a.readRange(name, at, x);
            b.readRange(name, at, y);
            if (!x.flip().equals(y.flip())) {
                return false;
            }
        }
        return true;
    }
}
