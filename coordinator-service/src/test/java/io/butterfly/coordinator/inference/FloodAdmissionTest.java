package io.butterfly.coordinator.inference;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.inference.engine.QueueFullException;
import io.butterfly.coordinator.inference.engine.SchedulerSettings;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 47, item 9, through the inference service over a scripted pipeline that takes 5 ms a step: one API key's
 * flood of 300 requests of 40 tokens gets its share (2 running, 4 queued) and 429s for the rest at once, without
 * its callers waiting for anything; another key's 1-token request, sent after the flood, starts at once and ends
 * long before the flood's last request. Before, the flood held every slot and queue place, and a 1-token request
 * waited 60 s.
 */
class FloodAdmissionTest {

    private static final Requester FLOOD = new Requester("key-flood", false);
    private static final Requester OTHER = new Requester("key-other", false);

    private ScriptedCluster cluster;

    @BeforeEach
    void ready(@TempDir Path dir) throws Exception {
        cluster = new ScriptedCluster(dir);
    }

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void oneKeysFloodGetsItsShareAndAnotherKeysShortRequestIsServedAtOnce() throws Exception {
        InferenceService service = cluster.service(ScriptedPipeline.answering(in -> {
            try {
                Thread.sleep(5); // a stage's step
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return ScriptedPipeline.answer(logits(in.logitRows()), in.logitRows(), ScriptedCluster.TINY.vocabSize());
        }), new SchedulerSettings(4, 64, 32, 64, 1, 2, 4));

        List<RequestHandle> admitted = new ArrayList<>();
        int refused = 0;
        long slowestRefusalNanos = 0;
        for (int i = 0; i < 300; i++) {
            long t0 = System.nanoTime();
            try {
                admitted.add(service.submit(request(40), null, FLOOD));
            } catch (QueueFullException e) {
                refused++;
                slowestRefusalNanos = Math.max(slowestRefusalNanos, System.nanoTime() - t0);
                assertThat(e.retryAfterSeconds()).isPositive();
            }
        }
        RequestHandle shortOne = service.submit(request(1), null, OTHER);

        // Its 4 waiting places, and again as many as the engine's thread started meanwhile (2 running at a time) or
        // saw end: on a loaded machine that thread may start none before the 300 submissions are over.
        assertThat(admitted.size()).as("4 queued, plus those started or ended meanwhile").isBetween(4, 12);
        assertThat(refused).isEqualTo(300 - admitted.size());
        assertThat(slowestRefusalNanos).as("a refusal waits for nothing").isLessThan(TimeUnit.MILLISECONDS.toNanos(500));
        shortOne.result().get(30, TimeUnit.SECONDS);
        long unfinished = admitted.stream().filter(h -> !h.result().isDone()).count();
        assertThat(unfinished).as("the short request ended while the flood still ran").isPositive();
        for (RequestHandle h : admitted) {
            h.result().get(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void aKeyOverItsTokensPerMinuteIsRefusedWithTheSecondsToWaitAndOthersAreNot() throws Exception {
        InferenceService service = cluster.service(ScriptedPipeline.answering(in -> ScriptedPipeline.answer(
                logits(in.logitRows()), in.logitRows(), ScriptedCluster.TINY.vocabSize())),
                ScriptedCluster.SCHEDULING, java.time.Duration.ofSeconds(60), 60);

        service.submit(request(40), null, FLOOD).result().get(30, TimeUnit.SECONDS); // 2 + 40 of its 60 a minute
        service.submit(request(30), null, FLOOD).result().get(30, TimeUnit.SECONDS); // admitted on its last 18
        QueueFullException refused = org.assertj.core.api.Assertions.catchThrowableOfType(QueueFullException.class,
                () -> service.submit(request(1), null, FLOOD));
        assertThat(refused).isNotNull();
        assertThat(refused.getMessage()).contains("60 tokens per minute", "tokens-per-minute-per-key");
        assertThat(refused.retryAfterSeconds()).isBetween(1L, 60L);
        service.submit(request(1), null, OTHER).result().get(30, TimeUnit.SECONDS);
        service.submit(request(1), null, Requester.ANONYMOUS).result().get(30, TimeUnit.SECONDS);
    }

    private static GenerationRequest request(int maxTokens) {
        return new GenerationRequest(null, List.of(1L, 17L), maxTokens, 0.0, null, null, null, true);
    }

    private static float[] logits(int rows) {
        float[] logits = new float[rows * ScriptedCluster.TINY.vocabSize()];
        for (int r = 0; r < rows; r++) {
            logits[r * ScriptedCluster.TINY.vocabSize() + 100] = 5f;
        }
        return logits;
    }
}
