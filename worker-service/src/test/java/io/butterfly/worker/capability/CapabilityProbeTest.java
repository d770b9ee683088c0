package io.butterfly.worker.capability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.pytorch.jni.JniUtils;
import io.butterfly.worker.engine.ComputeProbe;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The probe measures once, in the background, and hands the measurement (or why it failed) to whoever waits. */
class CapabilityProbeTest {

    @TempDir
    Path dataDir;

    @Test
    void measuresTheMachineAndLeavesTheEngineThreadCountAsItWas() {
        CapabilityProbe probe = new CapabilityProbe("cpu", 0, dataDir, 512L << 20, 2);
        Capabilities caps = probe.await();
        assertThat(probe.current()).isEqualTo(caps);
        assertThat(caps.cpuCores()).isEqualTo(Runtime.getRuntime().availableProcessors());
        assertThat(caps.measuredGflops()).isPositive();
        assertThat(caps.memoryBandwidthGbps()).isPositive();
        assertThat(caps.memoryLimitBytes()).isEqualTo(512L << 20);
        assertThat(caps.device()).isEqualTo("cpu()");
        assertThat(caps.weightBytes()).isEqualTo(2);
    }

    @Test
    void threadsThatStartUsingTheEngineAfterTheMeasurementGetAllItsThreads() throws Exception {
        new CapabilityProbe("cpu", 0, dataDir, 0, 4).await();
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
        assertThat(ComputeProbe.effectiveThreads(1, 2)).isEqualTo(1);
        assertThat(ComputeProbe.effectiveThreads(4, 2)).isEqualTo(4);
        assertThat(ComputeProbe.effectiveThreads(0, 2)).isEqualTo(2);
        assertThat(ComputeProbe.effectiveThreads(0, 0)).isEqualTo(1);
        CapabilityProbe probe = new CapabilityProbe("cpu", 1, dataDir, 0, 4);
        probe.await();
        assertThat(probe.engineThreads()).isEqualTo(1);
        CapabilityProbe engineDefault = new CapabilityProbe("cpu", 0, dataDir, 0, 4);
        engineDefault.await();
        assertThat(engineDefault.engineThreads()).isEqualTo(Runtime.getRuntime().availableProcessors());
    }

    @Test
    void aDeviceThatIsNotThereFailsTheWaitWithTheReason() {
        CapabilityProbe probe = new CapabilityProbe("gpu:7", 0, dataDir, 0, 4);
        assertThatThrownBy(probe::await).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("gpu:7");
        assertThat(probe.current()).isNull();
    }
}
