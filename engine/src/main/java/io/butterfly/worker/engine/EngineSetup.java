package io.butterfly.worker.engine;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDManager;
import ai.djl.pytorch.jni.JniUtils;
import io.butterfly.common.safetensors.SafetensorsFile;
import java.util.List;
import java.util.Locale;

/**
 * Starts the PyTorch engine with the requested thread count and resolves device names.
 *
 * <p>Threads: PyTorch's intra-op pool is process-wide. Before the engine starts, the system property
 * {@code ai.djl.pytorch.num_threads} (read by DJL's PtEngine) sets it; afterwards
 * {@link JniUtils#setNumThreads} ({@code torch::set_num_threads}) changes it, so both are applied.
 * The inter-op pool is left alone: it can only be sized before the first parallel op and this code runs
 * no inter-op parallel work.
 *
 * <p>TorchScript's graph executor runs without its optimizations (libtorch's {@code setGraphExecutorOptimize}):
 * optimized, it profiles a method's first calls and then rewrites its graph for the shapes it saw, so the same step
 * could run other kernels, rounding differently, depending on what ran before it. The stages' methods are already
 * written as the operations to run ({@link TorchScript}).
 *
 * <p>Public for the tools' plain DJL loop (butterfly-cli), a benchmark baseline that starts the engine as the
 * workers do.
 */
public final class EngineSetup {

    public static final String ENGINE = "PyTorch";

    private EngineSetup() {
    }

    public static synchronized Engine start(int threads) {
        if (threads > 0 && System.getProperty("ai.djl.pytorch.num_threads") == null) {
            System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
        }
        Engine engine = Engine.getEngine(ENGINE);
        JniUtils.setGraphExecutorOptimize(false);
        if (threads > 0 && JniUtils.getNumThreads() != threads) {
            JniUtils.setNumThreads(threads);
        }
        return engine;
    }

    /**
     * The base manager of a load: the engine started with {@code options}' threads, on its device. If that fails, the
     * load's {@code opened} files are closed (the load owns them) and the failure thrown.
     */
    static NDManager rootManager(ExecutorOptions options, List<SafetensorsFile> opened) {
        try {
            Engine engine = start(options.threads());
            return NDManager.newBaseManager(device(options.device(), engine), ENGINE);
        } catch (RuntimeException e) {
            SafetensorsFile.closeAll(opened, e);
            throw e;
        }
    }

    /** "cpu", "gpu" / "gpu:N", or "auto" (first GPU if the engine reports one, else CPU). */
    public static Device device(String name, Engine engine) {
        String n = name == null ? "auto" : name.trim().toLowerCase(Locale.ROOT);
        if (n.isEmpty() || n.equals("auto")) {
            return engine.getGpuCount() > 0 ? Device.gpu(0) : Device.cpu();
        }
        if (n.equals("cpu")) {
            return Device.cpu();
        }
        if (n.equals("gpu") || n.startsWith("gpu:") || n.startsWith("cuda:")) {
            int id;
            try {
                id = n.indexOf(':') < 0 ? 0 : Integer.parseInt(n.substring(n.indexOf(':') + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("device '" + name + "' is not cpu, gpu:N or auto");
            }
            int gpus = engine.getGpuCount();
            if (id < 0 || id >= gpus) {
                throw new IllegalArgumentException("device '" + name + "' requested but the engine reports " + gpus + " GPU(s)");
            }
            return Device.gpu(id);
        }
        throw new IllegalArgumentException("device '" + name + "' is not cpu, gpu:N or auto");
    }
}
