package io.butterfly.worker.capability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.pytorch.jni.JniUtils;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.worker.config.WorkerProperties;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.util.unit.DataSize;

/** The probe measures once, in the background, and hands the measurement (or why it failed) to whoever waits. */
class CapabilityProbeTest {

    @TempDir
    Path dataDir;

    private WorkerProperties props(String device, DataSize memoryLimit) {
        return new WorkerProperties("worker-t", "127.0.0.1", dataDir, device, 0, "butterfly", "127.0.0.1", 9082,
                100, "127.0.0.1", 0, List.of(), 5000, memoryLimit, java.time.Duration.ofMinutes(10), DataSize.ofBytes(0));
    }

    @Test
    void measuresTheMachineAndLeavesTheEngineThreadCountAsItWas() {
        CapabilityProbe probe = new CapabilityProbe(props("cpu", DataSize.ofMegabytes(512)));
        NodeCapabilities caps = probe.await();
        assertThat(probe.current()).isEqualTo(caps);
        assertThat(caps.getCpuCores()).isEqualTo(Runtime.getRuntime().availableProcessors());
        assertThat(caps.getMeasuredGflops()).isPositive();
        assertThat(caps.getMemoryBandwidthGbps()).isPositive();
        assertThat(caps.getMemoryLimitBytes()).isEqualTo(512L << 20);
        assertThat(caps.getDevice()).isEqualTo("cpu()");
    }

    @Test
    void threadsThatStartUsingTheEngineAfterTheMeasurementGetAllItsThreads() throws Exception {
        new CapabilityProbe(props("cpu", DataSize.ofBytes(0))).await();
        // The measurement ran on one thread; libtorch hands its thread count to each thread that first uses
        // it, so a count left at 1 would make every later worker thread single-threaded.
        int[] seen = new int[1];
        Thread fresh = new Thread(() -> seen[0] = JniUtils.getNumThreads());
        fresh.start();
        fresh.join();
        assertThat(seen[0]).isEqualTo(Runtime.getRuntime().availableProcessors());
    }

    @Test
    void theRateIsScaledByTheThreadsThePartitionWillComputeWith() {
        // A worker configured with one thread computes on one, whatever the engine's default at probing time.
        assertThat(CapabilityDetector.effectiveThreads(1, 2)).isEqualTo(1);
        assertThat(CapabilityDetector.effectiveThreads(4, 2)).isEqualTo(4);
        assertThat(CapabilityDetector.effectiveThreads(0, 2)).isEqualTo(2);
        assertThat(CapabilityDetector.effectiveThreads(0, 0)).isEqualTo(1);
        CapabilityProbe probe = new CapabilityProbe(new WorkerProperties("worker-t", "127.0.0.1", dataDir, "cpu", 1,
                "butterfly", "127.0.0.1", 9082, 100, "127.0.0.1", 0, List.of(), 5000, DataSize.ofBytes(0), java.time.Duration.ofMinutes(10), DataSize.ofBytes(0)));
        probe.await();
        assertThat(probe.engineThreads()).isEqualTo(1);
        CapabilityProbe engineDefault = new CapabilityProbe(props("cpu", DataSize.ofBytes(0)));
        engineDefault.await();
        assertThat(engineDefault.engineThreads()).isEqualTo(Runtime.getRuntime().availableProcessors());
    }

    @Test
    void aDeviceThatIsNotThereFailsTheWaitWithTheReason() {
        CapabilityProbe probe = new CapabilityProbe(props("gpu:7", DataSize.ofBytes(0)));
        assertThatThrownBy(probe::await).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("gpu:7");
        assertThat(probe.current()).isNull();
    }
}
