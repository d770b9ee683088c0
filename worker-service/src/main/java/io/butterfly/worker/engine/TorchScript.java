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

    private static final String SOURCES = "torchscript/";

    /** How projections compute: the {@code __torch__.butterfly.linear} implementation a stage is compiled with. */
    enum Linear {
        /** Float32 weights packed for MKL's GEMM once (CPU). */
        PACKED("linear_packed.py"),
        /** Float32 weights as loaded (GPU, or a build without MKL). */
        PLAIN("linear_plain.py"),
        /** Float16 or bfloat16 weights, float32 accumulation. */
        HALF("linear_half.py");

        private final String source;

        Linear(String source) {
            this.source = source;
        }
    }

    private final PtSymbolBlock module;

    private TorchScript(PtSymbolBlock module) {
        this.module = module;
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
            return new TorchScript(JniUtils.loadModule((PtNDManager) manager, new ByteArrayInputStream(archive), false, false));
        } catch (IOException e) {
            throw new UncheckedIOException(e); // read from memory: does not happen
        }
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
