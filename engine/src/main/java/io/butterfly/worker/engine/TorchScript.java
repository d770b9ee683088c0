package io.butterfly.worker.engine;

import ai.djl.engine.EngineException;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.pytorch.engine.PtNDManager;
import ai.djl.pytorch.engine.PtSymbolBlock;
import ai.djl.pytorch.jni.IValue;
import ai.djl.pytorch.jni.IValueUtils;
import ai.djl.pytorch.jni.JniUtils;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stage's math as a TorchScript module, compiled by libtorch from this package's sources
 * ({@code src/main/resources/io/butterfly/worker/engine/torchscript}) and run through DJL.
 *
 * <p>Why TorchScript rather than DJL's NDArray operations: a decode step is a few hundred small operations, and each
 * NDArray operation costs a Java object, its manager's bookkeeping and a JNI call on top of PyTorch's own dispatch;
 * one method call runs a stage's layers in libtorch's interpreter instead. It also reaches the operations DJL does not
 * bind: MKL's packed GEMM ({@code mkl::_mkl_linear}), {@code rms_norm}, half-precision weights without DJL's BF16
 * limits. The module holds no state: weights and caches are passed to its methods.
 *
 * <p>The graph executor's optimizations are off ({@link EngineSetup}): the module runs its operations as written,
 * the same kernels on every call, so a step's bits never depend on how often the code ran before.
 */
final class TorchScript implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(TorchScript.class);

    private static final String SOURCES = "torchscript/";

    /** How projections compute: the {@code __torch__.butterfly.linear} implementation a stage is compiled with. */
    enum Linear {
        /** Float32 weights reordered for oneDNN's kernels once (CPU); rows in blocks that round alike. */
        ONEDNN("linear_onednn.py", 1, "oneDNN float32"),
        /** Float32 weights packed for MKL's GEMM once (CPU, a libtorch without oneDNN). */
        PACKED("linear_packed.py", 4, "MKL packed float32"),
        /** Float32 weights as loaded (GPU, or a build without MKL). */
        PLAIN("linear_plain.py", 4, "libtorch float32"),
        /** Float16 or bfloat16 weights, float32 accumulation. */
        HALF("linear_half.py", 4, "libtorch half precision");

        private final String source;
        private final int rowQuantum;
        private final String description;

        Linear(String source, int rowQuantum, String description) {
            this.source = source;
            this.rowQuantum = rowQuantum;
            this.description = description;
        }

        String description() {
            return description;
        }

        /**
         * A batch-invariant step pads its rows to a multiple of this (see {@link StepBatch}): measured with DJL
         * 0.35.1 / libtorch 2.7.1 on CPU, MKL's GEMM (packed weights or not) rounds a row alike among 4, 8, ... 512
         * rows at any offset, with 1 or 2 threads, and otherwise among 1 to 3 rows (or, threaded, the last rows of a
         * count that is not a multiple of 4); {@code linear_onednn.py} needs no padding.
         */
        int rowQuantum() {
            return rowQuantum;
        }
    }

    private final PtSymbolBlock module;
    private final Linear linear;

    private TorchScript(PtSymbolBlock module, Linear linear) {
        this.module = module;
        this.linear = linear;
    }

    /** How this stage's projections compute. */
    Linear linear() {
        return linear;
    }

    /**
     * Compiles the module class {@code moduleClass} of source {@code stageSource} with the shared attention and the
     * given projections.
     *
     * @param profiled whether the stage's profiling scopes record (for {@code butterfly profile}) or are no-ops
     * @throws EngineException if libtorch refuses the code (e.g. an operation this build lacks)
     */
    static TorchScript compile(NDManager manager, String moduleClass, String stageSource, Linear linear, boolean profiled) {
        Map<String, String> code = new LinkedHashMap<>();
        code.put("__torch__.py", source(stageSource));
        code.put("__torch__/butterfly/attention.py", source("attention.py"));
        code.put("__torch__/butterfly/linear.py", source(linear.source));
        code.put("__torch__/butterfly/profile.py", source(profiled ? "profile_on.py" : "profile_off.py"));
        byte[] archive = TorchScriptArchive.of(moduleClass, code);
        try {
            return new TorchScript(JniUtils.loadModule((PtNDManager) manager, new ByteArrayInputStream(archive), false, false), linear);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // read from memory: does not happen
        }
    }

    /**
     * Compiles with the fastest float32 projections this libtorch has on a CPU: oneDNN's, else MKL's packed GEMM,
     * else the weights as loaded.
     */
    static TorchScript compileForCpu(NDManager manager, String moduleClass, String stageSource, boolean profiled) {
        for (Linear linear : new Linear[]{Linear.ONEDNN, Linear.PACKED}) {
            try {
                return compile(manager, moduleClass, stageSource, linear, profiled);
            } catch (EngineException e) {
                LOG.warn("{} projections are not available in this libtorch ({})", linear, e.getMessage());
            }
        }
        return compile(manager, moduleClass, stageSource, Linear.PLAIN, profiled);
    }

    private static String source(String name) {
        try (InputStream in = TorchScript.class.getResourceAsStream(SOURCES + name)) {
            if (in == null) {
                throw new IllegalStateException("TorchScript source " + SOURCES + name + " is not on the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Runs a method; the caller closes the result. */
    IValue call(String method, IValue... args) {
        return IValueUtils.runMethod(module, method, args);
    }

    /** Runs a method returning a tensor, as an array of {@code manager} (and of the current scope). */
    NDArray callForArray(NDManager manager, String method, IValue... args) {
        try (IValue result = call(method, args)) {
            return result.toTensor((PtNDManager) manager);
        }
    }

    /** Runs a method returning a list of tensors, as arrays of {@code manager}. */
    NDArray[] callForArrays(NDManager manager, String method, IValue... args) {
        try (IValue result = call(method, args)) {
            return result.toTensorArray((PtNDManager) manager);
        }
    }

    @Override
    public void close() {
        module.close();
    }
}
