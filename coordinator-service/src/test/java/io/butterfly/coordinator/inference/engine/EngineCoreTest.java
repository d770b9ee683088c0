package io.butterfly.coordinator.inference.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.inference.ScriptedCluster;
import io.butterfly.coordinator.inference.ScriptedPipeline;
import io.butterfly.coordinator.inference.sampling.Sampler;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.coordinator.inference.sampling.TokenChoice;
import io.butterfly.coordinator.structured.JsonSchemaGrammar;
import io.butterfly.coordinator.structured.TokenConstraint;
import io.butterfly.coordinator.structured.Vocabulary;
import java.time.Duration;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * The engine core takes everything as messages: while its thread is busy (here: held inside a step's update), every
 * other thread's submission, cancellation, detach, move and read returns at once, a full queue refuses at once
 * (counting what the engine has not taken yet), and each message takes effect, in order, when the thread is free.
 */
class EngineCoreTest {

    private static final Sequence.Decoding GREEDY = new Sequence.Decoding(new Sampler(SamplingParams.greedy()),
            ScriptedCluster.TINY, true);

    private final ScriptedPipeline pipeline = ScriptedPipeline.following(ScriptedCluster.TINY.vocabSize(),
            new long[]{7, 8, 9});
    private final EngineCore engine = new EngineCore(new SchedulerSettings(8, 64, 32, 3, 0), Duration.ofSeconds(60),
            pipeline, ServingMetrics.NONE);

    @AfterEach
    void close() {
        engine.close();
    }

    /** Records what the engine tells of one sequence. */
    private static class Recorded implements SequenceOutputs {
        final List<Long> tokens = new CopyOnWriteArrayList<>();
        final CompletableFuture<String> end = new CompletableFuture<>();

        @Override
        public boolean token(int index, TokenChoice choice, boolean last, long samplingNanos) {
            tokens.add((long) choice.tokenId());
            return false;
        }

        @Override
        public void finished(String finishReason) {
            end.complete(finishReason);
        }

        @Override
        public void failed(RuntimeException cause) {
            end.completeExceptionally(cause);
        }

        @Override
        public void left(ButterflyException answer, String pausedReason) {
            end.completeExceptionally(answer);
        }

        @Override
        public void refused(RuntimeException why) {
            end.completeExceptionally(why);
        }
    }

    /** Keeps the engine's thread in its first token until released. */
    private static final class Held extends Recorded {
        final CountDownLatch inToken = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        @Override
        public boolean token(int index, TokenChoice choice, boolean last, long samplingNanos) {
            tokens.add((long) choice.tokenId());
            inToken.countDown();
            try {
                release.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return false;
        }
    }

    private static Sequence sequence(String id, int maxTokens, SequenceOutputs outputs) {
        return new Sequence(id, new long[]{1, 17}, maxTokens, GREEDY, outputs);
    }

    private void serve() {
        engine.serve(new EngineCore.Serving(pipeline.route(List.of()), 1, List.of()));
    }

    @Test
    void whileTheEnginesThreadIsBusyEveryOtherThreadsCallReturnsAtOnceAndTakesEffectAfterInOrder() throws Exception {
        serve();
        Held slow = new Held();
        Sequence held = sequence("held", 5, slow);
        engine.submit(held);
        assertThat(slow.inToken.await(10, TimeUnit.SECONDS)).isTrue(); // the engine's thread is in held's first token

        Recorded next = new Recorded();
        Recorded leaving = new Recorded();
        Sequence detached = sequence("detached", 5, leaving);
        assertTimeoutPreemptively(Duration.ofSeconds(2), () -> {
            engine.submit(sequence("next", 3, next));
            engine.submit(detached);
            engine.cancel(held, "its client went away");
            engine.detach(detached, "its stream broke");
            engine.relinquish("nobody", "coordinator-9");
            assertThat(engine.load().running()).as("as last published").isEqualTo(1);
        }, "a call from another thread waited for the engine's");
        slow.release.countDown();

        assertThat(next.end.get(10, TimeUnit.SECONDS)).isEqualTo("length");
        assertThat(next.tokens).containsExactly(7L, 8L, 9L);
        assertThatThrownBy(() -> slow.end.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(ButterflyException.class)
                .hasMessageContaining("its client went away");
        assertThat(slow.tokens).as("it ended at its next step").containsExactly(7L);
        assertThatThrownBy(() -> leaving.end.get(10, TimeUnit.SECONDS))
                .cause().isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.kind()).isEqualTo(ErrorKind.UNAVAILABLE);
                    assertThat(e.context()).containsEntry(EngineCore.RESUMABLE_CONTEXT, "true");
                });
        awaitLoad(0);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (pipeline.released().size() < 3 && System.nanoTime() < deadline) {
            Thread.sleep(5); // released off the engine's thread
        }
        assertThat(pipeline.released()).containsExactlyInAnyOrder("held", "next", "detached");
    }

    @Test
    void aFullQueueRefusesAtOnceCountingWhatTheEngineHasNotTakenYet() throws Exception {
        Held slow = new Held();
        serve();
        engine.submit(sequence("held", 2, slow));
        assertThat(slow.inToken.await(10, TimeUnit.SECONDS)).isTrue();
        List<Recorded> queued = List.of(new Recorded(), new Recorded(), new Recorded());
        for (int i = 0; i < queued.size(); i++) {
            engine.submit(sequence("q" + i, 1, queued.get(i)));
        }
        assertThatThrownBy(() -> engine.submit(sequence("one too many", 1, new Recorded())))
                .isInstanceOf(QueueFullException.class).hasMessageContaining("max-waiting");
        assertThatThrownBy(() -> engine.submitAll(List.of(sequence("a", 1, new Recorded()))))
                .isInstanceOf(QueueFullException.class);
        slow.release.countDown();
        for (Recorded r : queued) {
            assertThat(r.end.get(10, TimeUnit.SECONDS)).isEqualTo("length");
        }
        Recorded after = new Recorded();
        engine.submit(sequence("after", 1, after)); // places are given back as sequences start
        assertThat(after.end.get(10, TimeUnit.SECONDS)).isEqualTo("length");
    }

    @Test
    void nothingIsSentUntilTheEngineIsToldWhereAndAStoppedEngineRefusesAtOnce() throws Exception {
        Recorded waiting = new Recorded();
        engine.submit(sequence("waits", 2, waiting));
        Thread.sleep(100);
        assertThat(pipeline.sent()).isEmpty();
        serve();
        assertThat(waiting.end.get(10, TimeUnit.SECONDS)).isEqualTo("length");

        engine.close();
        assertThatThrownBy(() -> engine.submit(sequence("late", 2, new Recorded())))
                .isInstanceOfSatisfying(ButterflyException.class,
                        e -> assertThat(e.getMessage()).contains("shutting down"));
    }

    @Test
    void aConstrainedSequencesMasksAreComputedWhileItsStepsAreInFlight() throws Exception {
        serve();
        byte[][] bytes = new byte[ScriptedCluster.TINY.vocabSize()][];
        for (int b = 0; b < 256; b++) {
            bytes[3 + b] = new byte[]{(byte) b}; // a byte-level vocabulary: 'é' is two tokens
        }
        TokenConstraint constraint = new TokenConstraint(JsonSchemaGrammar.compile(
                JsonMapper.builder().build().readTree("{\"const\":\"\u00e9\"}"), false),
                new Vocabulary(bytes, new BitSet()));
        Recorded out = new Recorded();
        engine.submit(new Sequence("json", new long[]{1, 17}, 16, new Sequence.Decoding(
                new Sampler(SamplingParams.greedy()), ScriptedCluster.TINY, true, constraint), out));
        assertThat(out.end.get(10, TimeUnit.SECONDS)).isEqualTo("stop");
        assertThat(out.tokens).containsExactly(3L + '"', 3L + 0xC3, 3L + 0xA9, 3L + '"');
        assertThat(constraint.computedWhenNeeded()).as("masks computed with the logits waiting").isZero();
    }

    private void awaitLoad(int running) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (engine.load().running() != running && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(engine.load().running()).isEqualTo(running);
    }
}
