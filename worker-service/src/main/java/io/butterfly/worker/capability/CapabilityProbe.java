package io.butterfly.worker.capability;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.pytorch.jni.JniUtils;
import io.butterfly.common.hash.Sha256;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.worker.config.WorkerProperties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Measures this worker's capabilities once, on its own thread, from the moment the application context
 * builds this bean. Starting the engine (libtorch) and measuring take 1-1.5 s on a busy machine; done while
 * the rest of the context starts, they no longer delay the join (done after start-up, they put that time
 * between the coordinator coming up and the worker being planned for).
 */
@Component
public class CapabilityProbe {

    private static final Logger log = LoggerFactory.getLogger(CapabilityProbe.class);

    private final CompletableFuture<NodeCapabilities> measured = new CompletableFuture<>();
    private volatile int engineThreads;

    public CapabilityProbe(WorkerProperties props) {
        Thread t = new Thread(() -> {
            try {
                long start = System.nanoTime();
                Device device = Devices.resolve(props.device());
                Engine.getInstance(); // starts libtorch: its default thread count is read next
                engineThreads = CapabilityDetector.effectiveThreads(props.threads(), JniUtils.getNumThreads());
                NodeCapabilities caps = CapabilityDetector.detect(device, props.dataDir(), props.memoryLimit().toBytes(),
                        engineThreads);
                log.info("capabilities in {} ms: cores={} memory={}MiB gflops={} memory-bandwidth={}GB/s storage={} device={}",
                        (System.nanoTime() - start) / 1_000_000, caps.getCpuCores(), caps.getMemoryBytes() >> 20,
                        String.format("%.1f", caps.getMeasuredGflops()),
                        String.format("%.1f", caps.getMemoryBandwidthGbps()), caps.getStorageType(), device);
                // Before joining, while the services start, not when the first shard arrives (see Sha256.warmUp).
                Sha256.warmUp(32);
                measured.complete(caps);
            } catch (Throwable e) {
                log.error("capability detection failed: {}", e.toString());
                measured.completeExceptionally(e);
            }
        }, "capability-probe");
        t.setDaemon(true);
        t.start();
    }

    /** The capabilities, waiting for the measurement; rethrows why it failed (e.g. a device that is not there). */
    public NodeCapabilities await() {
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
    public CompletableFuture<NodeCapabilities> measured() {
        return measured.copy();
    }

    /** The capabilities once measured, else null. */
    public NodeCapabilities current() {
        return measured.isDone() && !measured.isCompletedExceptionally() ? measured.join() : null;
    }
}
