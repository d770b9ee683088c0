package io.butterfly.discovery.admission;

import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.GpuInfo;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.discovery.v1.NodeRole;

/**
 * Reported capabilities must make physical sense (initialization-and-bootstrap.md §9.3 is_plausible):
 * the planner weights layer ranges by them, so a node claiming absurd resources could pull the whole
 * model onto itself. Bounds follow the spec: 1-1024 cores, 1 GiB-16 TiB memory, fp throughput up to
 * 3000 TFLOPS (the generous bound for an unknown GPU). A worker must report a measured throughput.
 */
public final class CapabilityPlausibility implements AdmissionCheck {

    static final long GIB = 1L << 30;
    static final long MAX_MEMORY = 16L * 1024 * GIB;
    static final double MAX_GFLOPS = 3000.0 * 1000.0;
    static final int MAX_GPUS = 64;
    static final long MAX_GPU_MEMORY = 1024 * GIB;
    /** Well above HBM3 (~3.4 TB/s); DRAM is far below. */
    static final double MAX_MEMORY_BANDWIDTH_GBPS = 10_000;

    @Override
    public void check(JoinAttempt attempt) {
        String problem = problem(attempt.request().getMember().getCapabilities(),
                attempt.request().getMember().getRole() == NodeRole.WORKER);
        if (problem != null) {
            throw new AdmissionException(ErrorCode.INSUFFICIENT_CAPABILITIES, ErrorKind.INVALID_ARGUMENT,
                    "implausible capabilities reported by '" + attempt.nodeId() + "': " + problem);
        }
    }

    /** Why the capabilities are implausible, or null when they are plausible. */
    static String problem(NodeCapabilities c, boolean worker) {
        if (c.getCpuCores() < 1 || c.getCpuCores() > 1024) {
            return "cpu_cores " + c.getCpuCores() + " outside 1..1024";
        }
        if (c.getMemoryBytes() < GIB || c.getMemoryBytes() > MAX_MEMORY) {
            return "memory_bytes " + c.getMemoryBytes() + " outside 1 GiB..16 TiB";
        }
        if (!(c.getMeasuredGflops() >= 0) || c.getMeasuredGflops() > MAX_GFLOPS) {
            return "measured_gflops " + c.getMeasuredGflops() + " outside 0..3e6";
        }
        if (!(c.getMemoryBandwidthGbps() >= 0) || c.getMemoryBandwidthGbps() > MAX_MEMORY_BANDWIDTH_GBPS) {
            return "memory_bandwidth_gbps " + c.getMemoryBandwidthGbps() + " outside 0..10000";
        }
        if (worker && c.getMeasuredGflops() == 0) {
            return "a worker must report a measured throughput (measured_gflops is 0)";
        }
        if (c.getGpusCount() > MAX_GPUS) {
            return c.getGpusCount() + " GPUs (at most " + MAX_GPUS + ")";
        }
        long gpuMemory = 0;
        for (GpuInfo g : c.getGpusList()) {
            if (g.getMemoryBytes() < 0 || g.getMemoryBytes() > MAX_GPU_MEMORY) {
                return "GPU " + g.getIndex() + " memory_bytes " + g.getMemoryBytes() + " outside 0..1 TiB";
            }
            gpuMemory += g.getMemoryBytes();
        }
        // Model bytes live in host or device memory; the detector reports heap + half of RAM at most.
        if (c.getMemoryLimitBytes() < 0 || c.getMemoryLimitBytes() > c.getMemoryBytes()) {
            return "memory_limit_bytes " + c.getMemoryLimitBytes() + " outside 0..memory_bytes";
        }
        if (c.getMaxModelBytes() < 0 || c.getMaxModelBytes() > 2 * c.getMemoryBytes() + gpuMemory) {
            return "max_model_bytes " + c.getMaxModelBytes() + " exceeds the reported memory";
        }
        return null;
    }
}
