package io.butterfly.worker.capability;

import java.util.List;

/**
 * What this worker can do (docs/initialization-and-bootstrap.md §2.3), as it joins the cluster.
 *
 * @param memoryBytes         the machine's physical memory
 * @param memoryLimitBytes    memory this worker offers for its partition (butterfly.worker.memory-limit); 0 = all of
 *                            {@code memoryBytes}. The planner uses the smaller of the two
 * @param device              the device partitions run on, as the engine names it (e.g. {@code cpu()})
 * @param measuredGflops      dense float32 throughput, GFLOP/s (a short matmul micro-benchmark)
 * @param memoryBandwidthGbps main-memory copy bandwidth, GB/s (a short array-copy micro-benchmark)
 * @param storageType         the kind of storage behind the data directory
 * @param weightBytes         bytes one projection weight takes once loaded (butterfly.worker.weight-dtype: 4 or 2)
 */
public record Capabilities(int cpuCores, long memoryBytes, long memoryLimitBytes, long maxModelBytes, String device,
                           List<Gpu> gpus, double measuredGflops, double memoryBandwidthGbps, StorageType storageType,
                           int weightBytes) {

    public Capabilities {
        gpus = List.copyOf(gpus);
    }

    /** A GPU the engine sees. */
    public record Gpu(int index, String name) {
    }
}
