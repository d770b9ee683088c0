package io.butterfly.worker.capability;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.hash.Sha256;
import io.butterfly.worker.engine.ComputeProbe;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Measures this worker's capabilities once, on its own thread, from the moment it is built (with the application
 * context). Starting the engine (libtorch) and measuring take 1-1.5 s on a busy machine; done while the rest of the
 * context starts, they no longer delay the join (done after start-up, they put that time between the coordinator
 * coming up and the worker being planned for).
 */
public class CapabilityProbe {

    private static final Logger log = LoggerFactory.getLogger(CapabilityProbe.class);

    private final CompletableFuture<Capabilities> measured = new CompletableFuture<>();
    private volatile int engineThreads;

    /**
     * @param device      "cpu", "gpu:N" or "auto"
     * @param threads     the engine's intra-op threads (0: the engine's default)
     * @param dataDir     where the worker keeps its data
     * @param memoryLimit bytes this worker offers for its partition (0: the machine's memory)
     * @param weightBytes bytes a projection weight takes once loaded (butterfly.worker.weight-dtype)
     */
    public CapabilityProbe(String device, int threads, Path dataDir, long memoryLimit, int weightBytes) {
        DaemonThreads.start("capability-probe", () -> {
            try {
                long start = System.nanoTime();
                ComputeProbe compute = ComputeProbe.start(device, threads);
                engineThreads = compute.engineThreads();
                Capabilities caps = CapabilityDetector.detect(compute, dataDir, memoryLimit, weightBytes);
                log.info("capabilities in {} ms: cores={} memory={}MiB gflops={} memory-bandwidth={}GB/s storage={} device={}",
                        (System.nanoTime() - start) / 1_000_000, caps.cpuCores(), caps.memoryBytes() >> 20,
                        String.format("%.1f", caps.measuredGflops()),
                        String.format("%.1f", caps.memoryBandwidthGbps()), caps.storageType(), caps.device());
                // Before joining, while the services start, not when the first shard arrives (see Sha256.warmUp).
                Sha256.warmUp(32);
                measured.complete(caps);
            } catch (Throwable e) {
                log.error("capability detection failed: {}", e.toString());
                measured.completeExceptionally(e);
            }
        });
    }

    /** The capabilities, waiting for the measurement; rethrows why it failed (e.g. a device that is not there). */
    public Capabilities await() {
        try {
            return measured.join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException re ? re : e;
        }
    }

    /** The engine (intra-op) threads this worker computes with; 0 until the engine has started. */
    public int engineThreads() {
        return engineThreads;
    }

    /** Completes with the capabilities once measured, or exceptionally with why they could not be. */
    public CompletableFuture<Capabilities> measured() {
        return measured.copy();
    }

    /** The capabilities once measured, else null. */
    public Capabilities current() {
        return measured.isDone() && !measured.isCompletedExceptionally() ? measured.join() : null;
    }
}
