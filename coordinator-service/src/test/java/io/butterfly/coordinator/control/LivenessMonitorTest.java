package io.butterfly.coordinator.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.config.LivenessProperties;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The monitor's ticks with a fake clock: verdicts reach the log and listeners; a late tick takes none. */
class LivenessMonitorTest {

    static final class FakeClock extends Clock {
        long millis = 1_000_000;

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(millis);
        }
    }

    private final FakeClock clock = new FakeClock();
    private final LivenessProperties props = new LivenessProperties(8.0, 4.0, 200, Duration.ofMillis(100),
            Duration.ofMillis(800), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(25),
            Duration.ofMillis(250), Duration.ofSeconds(10), Duration.ofSeconds(5));
    private final Liveness liveness = new Liveness(props.detectorSettings(), clock);
    private final List<ClusterCommand> heard = new ArrayList<>();
    private final InMemoryControlLog control = new InMemoryControlLog();
    private LivenessMonitor monitor;

    @BeforeEach
    void setUp() {
        monitor = new LivenessMonitor(control, liveness, props.monitorSettings(), clock);
        control.submit(new ClusterCommand.Bootstrap("tiny", 1, 1));
        control.submit(new ClusterCommand.ModelResolved("tiny", "root", 2));
        control.submit(new ClusterCommand.NodeJoined(new NodeInfo("w1", "worker", "127.0.0.1", 1, 2, 2, 1L << 30, 1,
                "cpu"), 3));
        control.submit(new ClusterCommand.PartitionsAssigned(1, List.of(new StageAssignment("w1", 0, 2, true, true)), 4));
        control.submit(new ClusterCommand.LoadCompleted("w1", 1, "c", 5));
        control.submit(new ClusterCommand.WeightsValidated(new WeightValidation(1, WeightValidation.Status.VALID,
                "root", "p", List.of("w1"), List.of(), List.of(), 6), 6));
        monitor.onVerdict(heard::add);
    }

    @AfterEach
    void tearDown() {
        control.close();
    }

    /** Ticks every 25 ms for {@code ms}; w1 beats every 100 ms if {@code beating}. */
    private void run(long ms, boolean beating) {
        for (long t = 0; t < ms; t += 25) {
            clock.millis += 25;
            if (beating && clock.millis % 100 == 0) {
                liveness.heartbeat("w1", 1);
            }
            monitor.tick();
        }
    }

    @Test
    void aClosedStreamIsFailedAndTheSystemDegraded() {
        long stream = liveness.streamOpened("w1");
        run(1_000, true);
        assertEquals(SystemState.READY, control.state().system());
        liveness.streamClosed("w1", stream);
        run(400, false);
        assertEquals(WorkerState.FAILED, control.state().nodes().get("w1").state());
        assertEquals(SystemState.DEGRADED, control.state().system());
        assertInstanceOf(ClusterCommand.NodeSuspected.class, heard.get(0));
        assertInstanceOf(ClusterCommand.NodeFailed.class, heard.get(1));
    }

    @Test
    void aLateTickTakesNoVerdictsUntilHeartbeatsCanBeRead() {
        liveness.streamOpened("w1");
        run(1_000, true);
        monitor.tick();
        // The coordinator itself stalls for 2 s: the worker's beats sit unread in the socket.
        clock.millis += 2_000;
        monitor.tick();
        assertTrue(heard.isEmpty(), heard.toString());
        // They are read right after; the quiet period lets that happen before any verdict.
        liveness.heartbeat("w1", 1);
        run(1_000, true);
        assertTrue(heard.isEmpty(), heard.toString());
        assertEquals(WorkerState.READY, control.state().nodes().get("w1").state());
    }
}
