package io.butterfly.discovery.admission;

import io.butterfly.discovery.membership.Capabilities;

import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;

/**
 * Reported capabilities must make physical sense (docs/initialization-and-bootstrap.md §9.3 is_plausible):
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
        String problem = problem(attempt.request().member().capabilities(),
                "worker".equals(attempt.request().member().role()));
        if (problem != null) {
            throw new AdmissionException(ErrorCode.INSUFFICIENT_CAPABILITIES, ErrorKind.INVALID_ARGUMENT,
                    "implausible capabilities reported by '" + attempt.nodeId() + "': " + problem);
        }
    }

    /** Why the capabilities are implausible, or null when they are plausible. */
    static String problem(Capabilities c, boolean worker) {
        if (c.cpuCores() < 1 || c.cpuCores() > 1024) {
            return "cpu_cores " + c.cpuCores() + " outside 1..1024";
        }
        if (c.memoryBytes() < GIB || c.memoryBytes() > MAX_MEMORY) {
            return "memory_bytes " + c.memoryBytes() + " outside 1 GiB..16 TiB";
        }
        if (!(c.measuredGflops() >= 0) || c.measuredGflops() > MAX_GFLOPS) {
            return "measured_gflops " + c.measuredGflops() + " outside 0..3e6";
        }
        if (!(c.memoryBandwidthGbps() >= 0) || c.memoryBandwidthGbps() > MAX_MEMORY_BANDWIDTH_GBPS) {
            return "memory_bandwidth_gbps " + c.memoryBandwidthGbps() + " outside 0..10000";
        }
        if (worker && c.measuredGflops() == 0) {
            return "a worker must report a measured throughput (measured_gflops is 0)";
        }
        if (c.gpus().size() > MAX_GPUS) {
            return c.gpus().size() + " GPUs (at most " + MAX_GPUS + ")";
        }
        long gpuMemory = 0;
        for (Capabilities.Gpu g : c.gpus()) {
            if (g.memoryBytes() < 0 || g.memoryBytes() > MAX_GPU_MEMORY) {
                return "GPU " + g.index() + " memory_bytes " + g.memoryBytes() + " outside 0..1 TiB";
            }
            gpuMemory += g.memoryBytes();
        }
        // Model bytes live in host or device memory; the detector reports heap + half of RAM at most.
        if (c.memoryLimitBytes() < 0 || c.memoryLimitBytes() > c.memoryBytes()) {
            return "memory_limit_bytes " + c.memoryLimitBytes() + " outside 0..memory_bytes";
        }
        if (c.maxModelBytes() < 0 || c.maxModelBytes() > 2 * c.memoryBytes() + gpuMemory) {
            return "max_model_bytes " + c.maxModelBytes() + " exceeds the reported memory";
        }
        if (c.weightBytes() != 0 && c.weightBytes() != 2 && c.weightBytes() != 4) {
            return "weight_bytes " + c.weightBytes() + " is not 2 (F16, BF16) or 4 (F32)";
        }
        return null;
    }
}
