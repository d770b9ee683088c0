package io.butterfly.worker.engine;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.jni.JniUtils;

/**
 * What the engine can tell of this machine for the worker's capabilities: the device a partition will run on,
 * the GPUs, the intra-op threads and a measured float32 matmul rate (which the planner weights layer ranges by).
 * Starting it starts the engine (libtorch) with its defaults, so the engine's default thread count is read before
 * any partition sets its own.
 */
public final class ComputeProbe {

    private final Device device;
    private final int gpuCount;
    private final int engineThreads;

    private ComputeProbe(Device device, int gpuCount, int engineThreads) {
        this.device = device;
        this.gpuCount = gpuCount;
        this.engineThreads = engineThreads;
    }

    /**
     * Starts the engine and resolves the device.
     *
     * @param device            the worker's setting: "cpu", "gpu:N" or "auto"
     * @param configuredThreads the worker's intra-op threads setting (0: the engine's default)
     * @throws IllegalArgumentException if the device is not there
     */
    public static ComputeProbe start(String device, int configuredThreads) {
        Engine engine = Engine.getInstance(); // starts libtorch: its default thread count is read next
        int threads = effectiveThreads(configuredThreads, JniUtils.getNumThreads());
        return new ComputeProbe(EngineSetup.device(device, engine), engine.getGpuCount(), threads);
    }

    /** The device, as the engine names it (e.g. {@code cpu()}). */
    public String device() {
        return device.toString();
    }

    public int gpuCount() {
        return gpuCount;
    }

    /** The intra-op threads the worker's partition will run on ({@link #effectiveThreads}). */
    public int engineThreads() {
        return engineThreads;
    }

    /** The measured matmul rate of a partition on this device and these threads, GFLOP/s (~0.1 s). */
    public double measureGflops() {
        return measureGflops(device, engineThreads);
    }

    /**
     * A short square-matmul benchmark (~0.1 s) on the worker's device: the rate of the fastest repetition.
     * The best repetition, not the mean, because workers measure while their siblings' JVMs start on the same
     * machine: a mean then records that moment's contention (1.4 to 3.4 GFLOPS on identical workers), and the
     * planner would hand one worker several times the layers of another.
     *
     * <p>On a CPU the matmul runs on one engine thread and the rate is scaled by the engine's intra-op threads:
     * a repetition on two threads is only fast when both get a core for its whole length at once, which on a
     * busy machine may not happen in the budget (identical workers measured 22, 33 and 60 GFLOPS, and the
     * slowest got a third of the layers of the fastest). It is also smaller (128x128): with 256x256 (~1 ms on one
     * thread) one of three identical workers still measured 40% of the others while their JVMs were starting;
     * a repetition a twentieth as long is rarely interrupted. A GPU keeps 256x256 (launch overhead would
     * dominate a smaller one). The thread count is libtorch's, process-wide, and each thread that
     * starts using the engine takes it over: this runs before the worker joins, so no partition runs
     * meanwhile, and the count is put back before anything else can use the engine.
     */
    private static double measureGflops(Device device, int engineThreads) {
        if (!device.isGpu()) {
            int threads = JniUtils.getNumThreads();
            JniUtils.setNumThreads(1);
            try {
                return bestMatmulRate(device, 128) * engineThreads;
            } finally {
                JniUtils.setNumThreads(threads);
            }
        }
        return bestMatmulRate(device, 256);
    }

    /**
     * The intra-op threads a partition will run on: the configured count, else the engine's default. The
     * probe starts the engine before the partition sets its count, so the engine's count at measuring time
     * is its default, not what a worker configured with fewer threads will compute with.
     */
    public static int effectiveThreads(int configured, int engineDefault) {
        return configured > 0 ? configured : Math.max(1, engineDefault);
    }

    private static double bestMatmulRate(Device device, int n) {
        try (NDManager m = NDManager.newBaseManager(device)) {
            NDArray a = m.randomUniform(-1, 1, new Shape(n, n), DataType.FLOAT32);
            NDArray b = m.randomUniform(-1, 1, new Shape(n, n), DataType.FLOAT32);
            a.matMul(b).close();
            int reps = 0;
            long start = System.nanoTime();
            long fastest = Long.MAX_VALUE;
            long now = start;
            do {
                long repStart = now;
                a.matMul(b).toFloatArray();
                now = System.nanoTime();
                fastest = Math.min(fastest, now - repStart);
                reps++;
            } while (now - start < 100_000_000L && reps < 10_000);
            return 2.0 * n * n * n / Math.max(1, fastest);
        }
    }
}
