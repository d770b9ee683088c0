package io.butterfly.worker.capability;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.jni.JniUtils;
import io.butterfly.proto.common.v1.GpuInfo;
import io.butterfly.proto.common.v1.NodeCapabilities;
import java.lang.management.ManagementFactory;

/**
 * Detects what this worker can do (initialization-and-bootstrap.md §2.3): cores, memory, GPUs, a
 * measured float32 matmul throughput (which the planner uses to weight layer ranges), measured memory
 * bandwidth and the storage type behind the data directory.
 */
public final class CapabilityDetector {

    private CapabilityDetector() {
    }

    /**
     * @param dataDir     where the worker keeps its data (its storage type is reported)
     * @param memoryLimit bytes this worker may use (butterfly.worker.memory-limit); 0 = no limit. Reported as
     *                    memory_limit_bytes next to the physical memory; the planner never gives the worker
     *                    more than the smaller of the two.
     * @param engineThreads the intra-op threads the worker's partition will run on ({@link #effectiveThreads});
     *                    a CPU's measured rate is scaled by it.
     */
    public static NodeCapabilities detect(Device device, java.nio.file.Path dataDir, long memoryLimit, int engineThreads) {
        NodeCapabilities.Builder caps = NodeCapabilities.newBuilder()
                .setCpuCores(Runtime.getRuntime().availableProcessors())
                .setMemoryBytes(physicalMemory())
                .setMemoryLimitBytes(memoryLimit > 0 ? Math.min(memoryLimit, physicalMemory()) : 0)
                .setMaxModelBytes(Runtime.getRuntime().maxMemory() + physicalMemory() / 2)
                .setDevice(device.toString());
        int gpus = Engine.getInstance().getGpuCount();
        for (int i = 0; i < gpus; i++) {
            caps.addGpus(GpuInfo.newBuilder().setIndex(i).setName("cuda:" + i));
        }
        caps.setMeasuredGflops(measureGflops(device, engineThreads));
        caps.setMemoryBandwidthGbps(MemoryBandwidth.measureGbps(250_000_000L));
        caps.setStorageType(StorageTypeDetector.detect(dataDir));
        return caps.build();
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
    static double measureGflops(Device device, int engineThreads) {
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

    private static long physicalMemory() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getTotalMemorySize();
        }
        return Runtime.getRuntime().maxMemory();
    }
}
