package io.butterfly.discovery.admission;

import java.util.List;

/**
 * What a node reports it can do (docs/initialization-and-bootstrap.md §2.3), as far as admission judges it.
 *
 * @param measuredGflops     dense float32 throughput from the node's own micro-benchmark
 * @param memoryLimitBytes   memory offered for a partition; 0 = all of {@code memoryBytes}
 */
public record Capabilities(int cpuCores, long memoryBytes, long maxModelBytes, List<Gpu> gpus, double measuredGflops,
                           double memoryBandwidthGbps, long memoryLimitBytes) {

    public Capabilities {
        gpus = List.copyOf(gpus);
    }

    public record Gpu(int index, long memoryBytes) {
    }
}
