package io.butterfly.coordinator.inference.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.inference.engine.StepInput;
import io.butterfly.coordinator.inference.engine.StepResult;
import io.butterfly.coordinator.reconcile.Assignment;
import io.butterfly.coordinator.integrity.PartitionReport;
import io.butterfly.coordinator.reconcile.Workers;
import io.butterfly.coordinator.cluster.WeightValidation;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The auditor never holds up the thread that completes a served step (in production a gRPC event loop). */
class StepAuditorTest {

    /** Workers whose assign calls block, once {@link #block} is set, until {@link #release} opens. */
    private static final class SlowWorkers implements Workers {
        final AtomicInteger assigns = new AtomicInteger();
        final CountDownLatch release = new CountDownLatch(1);
        volatile boolean block;

        @Override
        public void assign(NodeInfo worker, Assignment assignment, Duration deadline) {
            assigns.incrementAndGet();
            if (block) {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public void reconnect(NodeInfo worker) {
        }

        @Override
        public PartitionReport checksums(NodeInfo worker, long epoch, Duration deadline) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void announceValidation(NodeInfo worker, WeightValidation validation, Duration deadline) {
        }

        @Override
        public void dismiss(NodeInfo worker, long epoch, long term, Duration deadline) {
        }
    }

    /** A pipeline whose steps never answer: the test is about who waits, not about results. */
    private static final class SilentPipeline implements Pipeline {
        final AtomicInteger submitted = new AtomicInteger();

        @Override
        public Route route(List<NodeInfo> stages) {
            return new Route() {
            };
        }

        @Override
        public CompletableFuture<StepResult> submit(Route route, StepInput input) {
            submitted.incrementAndGet();
            return new CompletableFuture<>();
        }

        @Override
        public void abortThrough(String nodeId, String why) {
        }

        @Override
        public void release(Route route, List<String> sequenceIds) {
        }
    }

    /**
     * While spares are being placed (blocking assign calls, up to 10 s each), a served step that completes must not
     * wait for the placement: in production it completes on a gRPC event loop that also carries workers' heartbeats
     * and the assign calls' own answers. It once waited on the auditor's lock, a worker was declared lost and a
     * paused request's replay gave up (AuditProcessIT, intermittent).
     */
    @Test
    void aServedStepCompletesWithoutWaitingForSparesBeingPlaced() throws Exception {
        InMemoryControlLog control = new InMemoryControlLog();
        ReadyCluster.bootstrap(control); // w1 and w2 serve epoch 1
        control.submit(new ClusterCommand.NodeJoined(worker("w3"), 10));
        control.submit(new ClusterCommand.NodeJoined(worker("w4"), 11));
        SlowWorkers workers = new SlowWorkers();
        SilentPipeline pipeline = new SilentPipeline();
        try (StepAuditor auditor = new StepAuditor(new StepAuditor.Settings(1.0, true, 42), pipeline, workers,
                control)) {
            // the audit pipeline is placed (w3, w4 hold the two stages again)
            waitUntil(() -> workers.assigns.get() >= 2);
            workers.block = true;
            int before = workers.assigns.get();
            control.submit(new ClusterCommand.NodeJoined(worker("w5"), 12)); // the spares change: placed again
            waitUntil(() -> workers.assigns.get() > before); // ... and that placement now hangs in an assign call

            CompletableFuture<StepResult> served = new CompletableFuture<>();
            CompletableFuture<StepResult> result = auditor.sent(new StepInput(1, control.state().epoch(),
                    List.of(new StepInput.Slice("task-1", 0, 2, 8, Map.of(), false, -1)), new long[] {1, 7}), served);
            try {
                assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
                    served.complete(new Answer());
                }, "completing a served step waited for the placement's assign calls");
            } finally {
                workers.release.countDown();
            }
            assertThat(result).isNotDone(); // before sampling: held until its audit agrees
            waitUntil(() -> pipeline.submitted.get() >= 1); // the audit went to the audit pipeline
        }
    }

    private static NodeInfo worker(String id) {
        return new NodeInfo(id, "worker", "host-" + id, 9000, 8000, 4, 8L << 30, 12.5, "cpu");
    }

    private static void waitUntil(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 30 s");
            }
            Thread.sleep(10);
        }
    }

    /** A served step's answer with no content: the auditor only passes it on. */
    private static final class Answer implements StepResult {
        @Override
        public float[] logits() {
            return new float[0];
        }

        @Override
        public List<Long> logitsShape() {
            return List.of();
        }

        @Override
        public List<StageTiming> timings() {
            return List.of();
        }
    }
}
