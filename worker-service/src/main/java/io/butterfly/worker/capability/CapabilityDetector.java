package io.butterfly.worker.capability;

import io.butterfly.worker.engine.ComputeProbe;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Detects what this worker can do (docs/initialization-and-bootstrap.md §2.3): cores, memory, GPUs, a
 * measured float32 matmul throughput (which the planner uses to weight layer ranges), measured memory
 * bandwidth and the storage type behind the data directory.
 */
public final class CapabilityDetector {

    private CapabilityDetector() {
    }

    /**
     * @param compute     the engine's view of the device and threads the worker's partition will run on; a CPU's
     *                    measured rate is scaled by the threads
     * @param dataDir     where the worker keeps its data (its storage type is reported)
     * @param memoryLimit bytes this worker may use (butterfly.worker.memory-limit); 0 = no limit. Reported as
     *                    memory_limit_bytes next to the physical memory; the planner never gives the worker
     *                    more than the smaller of the two.
     * @param weightBytes bytes a projection weight takes once loaded (butterfly.worker.weight-dtype)
     */
    public static Capabilities detect(ComputeProbe compute, Path dataDir, long memoryLimit, int weightBytes) {
        int cores = Runtime.getRuntime().availableProcessors();
        long memory = physicalMemory();
        long limit = memoryLimit > 0 ? Math.min(memoryLimit, memory) : 0;
        long maxModel = Runtime.getRuntime().maxMemory() + memory / 2;
        List<Capabilities.Gpu> gpus = new ArrayList<>();
        for (int i = 0; i < compute.gpuCount(); i++) {
            gpus.add(new Capabilities.Gpu(i, "cuda:" + i));
        }
        double gflops = compute.measureGflops();
        double bandwidth = MemoryBandwidth.measureGbps(250_000_000L);
        return new Capabilities(cores, memory, limit, maxModel, compute.device(), gpus, gflops, bandwidth,
                StorageTypeDetector.detect(dataDir), weightBytes);
    }

    private static long physicalMemory() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getTotalMemorySize();
        }
        return Runtime.getRuntime().maxMemory();
    }
}
