package io.butterfly.worker.engine.cpu;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CPU kernels of stages with quantized weights ({@code libbutterfly_kernels.so}, built from {@code src/main/c}
 * into this jar on Linux x86-64), through JNI.
 *
 * <p>Why kernels of our own: a decode step reads every weight once, so its speed is the weights' bytes over the
 * memory's bandwidth, and 8- and 4-bit weights are 4 to 7 times fewer bytes than float32. libtorch's own weight-only
 * kernels ({@code _weight_int8pack_mm}, {@code _weight_int4pack_mm_for_cpu}) vectorize only bfloat16 activations on
 * x86 and round their output to bfloat16 (float32 inputs take a scalar loop), and its int8 GEMMs (fbgemm, oneDNN)
 * quantize the activations too; none reads ggml's blocks, so a GGUF file's Q4_K or Q6_K tensors would have to be
 * converted, not loaded as they are. These kernels read ggml's blocks in place, keep activations in float32, and run a
 * whole stage's layers in one call with the small operations between the products (docs/models.md compares them).
 *
 * <p>Every address passed here was checked by the caller against the memory it points into: the kernels trust them.
 * Nothing here is thread-safe; a stage calls it from one thread at a time.
 */
public final class NativeKernels {

    private static final Logger LOG = LoggerFactory.getLogger(NativeKernels.class);
    private static final String LIBRARY = "libbutterfly_kernels.so";
    private static final Optional<String> LOAD_ERROR = load();

    private NativeKernels() {
    }

    /** Whether the kernels are loaded (Linux x86-64, built with gcc). */
    public static boolean available() {
        return LOAD_ERROR.isEmpty();
    }

    /** Why the kernels are not available, if they are not. */
    public static Optional<String> loadError() {
        return LOAD_ERROR;
    }

    /**
     * "avx2+vnni", "avx2+avx512vnni", "avx2" or "portable": the kernels this CPU runs (they give the same bits;
     * with either VNNI, the 8-bit products of quantized weights use vpdpbusd on 256-bit vectors).
     */
    public static String instructionSet() {
        return available() ? loadedInstructionSet() : "portable";
    }

    private static String loadedInstructionSet() {
        if (!usesAvx2()) {
            return "portable";
        }
        return switch (vnniEncoding()) {
            case 1 -> "avx2+vnni";
            case 2 -> "avx2+avx512vnni";
            default -> "avx2";
        };
    }

    static boolean usesVnni() {
        return vnniEncoding() != 0;
    }

    private static Optional<String> load() {
        String os = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            return Optional.of("the kernels are built for Linux x86-64, this is " + os + " " + arch);
        }
        try (InputStream in = NativeKernels.class.getResourceAsStream("linux-x86_64/" + LIBRARY)) {
            if (in == null) {
                return Optional.of(LIBRARY + " is not in the worker's jar (it is built where gcc is installed)");
            }
            Path file = Files.createTempFile("butterfly-kernels-", ".so");
            file.toFile().deleteOnExit();
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            System.load(file.toString());
            LOG.info("CPU kernels loaded ({} instructions)", loadedInstructionSet());
            return Optional.empty();
        } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
            return Optional.of("loading " + LIBRARY + " failed: " + e.getMessage());
        }
    }

    // ------------------------------------------------------------ natives (src/main/c/bfk_jni.c)

    static native boolean usesAvx2();

    static native boolean hasAvx2();

    /** For tests: computes with the portable kernels even where AVX2 is there (they must give the same bits). */
    public static native void forcePortable(boolean on);

    /** 0, or which encoding of vpdpbusd the products use: 1 AVX-VNNI's, 2 AVX512-VNNI's (bfk.h). */
    static native int vnniEncoding();

    /** For tests: the AVX2 products without VNNI even where the CPU has it (they must give the same bits). */
    public static native void forceWithoutVnni(boolean on);

    /** The address of a direct buffer's memory. */
    public static native long address(ByteBuffer direct);

    /**
     * Drops the whole pages of a read-only file mapping's range from the process's resident memory (madvise
     * MADV_DONTNEED): the page cache keeps them, a later read faults them in again. 0, or the errno.
     */
    public static native int releasePages(long address, long length);

    public static native long poolCreate(int threads);

    public static native void poolDestroy(long pool);

    /** The step is over: the pool's threads sleep now instead of spinning for a task (the next run wakes them). */
    public static native void poolRest(long pool);

    public static native long stageCreate(int hidden, int heads, int kvHeads, int intermediate, int layers,
                                          int maxPositions, float eps);

    /** A layer's matrix, in ggml's layout or {@link #interleave interleaved}; the stage reads its memory until destroyed. */
    public static native void stageSetMatrix(long stage, int layer, int slot, int type, int rows, int cols, long address,
                                             boolean interleaved);

    public static native void stageSetVector(long stage, int layer, int slot, long address);

    /** A head dim other than hidden / heads (a head shard's slice). */
    public static native void stageSetHeadDim(long stage, int headDim);

    /** Whether the stage's block-format matrices multiply activations rounded to 8 bits (bfk_q8.c). */
    public static native void stageSetQ8Activations(long stage, boolean on);

    public static native void stageDestroy(long stage);

    /**
     * Runs the stage's layers over {@code rows} rows of hidden states at {@code x}, in place.
     *
     * @param seqs   per sequence: first row, new tokens, position of the first, cache capacity
     * @param caches per sequence, its cache's address ({@code [layers, 2, kvHeads, capacity, headDim]} float32)
     * @param cos    {@code [rows, headDim]} rotary cosines of each row's position
     * @param sin    {@code [rows, headDim]} signed sines ({@code [-sin, sin]})
     * @return 0, or -1 when memory ran out
     */
    public static int stageForward(long stage, long pool, long x, int rows, int[] seqs, long[] caches, long cos,
                                   long sin) {
        return stageForward(stage, pool, x, rows, seqs, caches, cos, sin, -1, -1);
    }

    /**
     * As {@link #stageForward(long, long, long, int, int[], long[], long, long)} but the stage's layers {@code [first,
     * end)} only (first -1: all), each by the same code as in a whole call: running them one call at a time gives the
     * same bits (per-layer snapshot hashes read the rows between the calls).
     *
     * @return 0, -1 when memory ran out, -2 for a range outside the stage's layers
     */
    public static native int stageForward(long stage, long pool, long x, int rows, int[] seqs, long[] caches, long cos,
                                          long sin, int first, int end);

    /**
     * One half of the stage's layer {@code layer} over {@code rows} rows at {@code x} (left as they are), without the
     * residual, into {@code out [rows, hidden]}: the attention (the step's keys and values written into the caches;
     * arguments as {@link #stageForward}) or, if {@code mlp}, the MLP (seqs, caches, cos and sin unused).
     *
     * @return 0, or -1 when memory ran out or there is no such layer
     */
    public static native int stageHalf(long stage, long pool, int layer, boolean mlp, long x, int rows, int[] seqs,
                                       long[] caches, long cos, long sin, long out);

    /**
     * {@code out [m, rows] = x [m, cols] . w^T} for a matrix of ggml type {@code type}, from {@code x} rounded to 8 bits
     * if {@code q8Activations} and the type is a block format; 0, or -1 when memory ran out.
     */
    public static native int product(long pool, int type, int rows, int cols, long w, boolean interleaved, long x,
                                     int m, boolean q8Activations, long out);

    /**
     * Writes at {@code to} (as many bytes as at {@code from}) the matrix at {@code from} with its rows interleaved
     * eight at a time (bfk_x8.c), as the products with 8-bit activations read Q8_0 and Q4_0 fastest; false, writing
     * nothing, if that layout does not apply (another type, rows not a multiple of 8).
     */
    public static native boolean interleave(int type, int rows, int cols, long from, long to);

    /** Rows {@code ids} of a matrix of ggml type {@code type}, as float32, one after another at {@code out}. */
    public static native void dequantizeRows(int type, int rows, int cols, long w, boolean interleaved, int[] ids,
                                             long out);

    /** RMSNorm of {@code rows} rows of {@code n} floats at {@code x} with weights at {@code weight}, into {@code out}. */
    public static native void rmsNorm(long x, long weight, int rows, int n, float eps, long out);

    /**
     * One query's attention (bfk_attend) over {@code len} positions of {@code hd} floats (a multiple of 8):
     * {@code scores} has room for {@code len} floats, {@code out} for {@code hd}. For tests: stages call it themselves.
     */
    public static native void attend(long q, long keys, long values, int len, int hd, float scale, long scores,
                                     long out);

    /** Bytes of a row of {@code cols} values of ggml type {@code type}. */
    public static native long rowBytes(int type, int cols);
}
