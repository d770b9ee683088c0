package io.butterfly.discovery.membership;

import java.util.List;

/**
 * What a node reports it can do (docs/initialization-and-bootstrap.md §2.3): admission judges it, the listing shows
 * it, the stores keep it.
 *
 * @param measuredGflops   dense float32 throughput from the node's own micro-benchmark
 * @param device           the device its engine computes on ({@code cpu}, {@code gpu:0}, ...)
 * @param storageType      the kind of storage behind its data directory ({@code SSD}, {@code HDD}, ...)
 * @param memoryLimitBytes memory offered for a partition; 0 = all of {@code memoryBytes}
 * @param weightBytes      bytes one projection weight takes in the node's engine (4 float32, 2 half); 0 = not reported
 */
public record Capabilities(int cpuCores, long memoryBytes, long maxModelBytes, List<Gpu> gpus, double measuredGflops,
                           String device, double memoryBandwidthGbps, String storageType, long memoryLimitBytes,
                           int weightBytes) {

    public Capabilities {
        gpus = List.copyOf(gpus);
    }

    public record Gpu(int index, String name, long memoryBytes) {
    }
}
