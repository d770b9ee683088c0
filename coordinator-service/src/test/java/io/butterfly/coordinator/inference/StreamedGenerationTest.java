package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.StepInput;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.model.Tokenizer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A generation told token by token (what {@code POST /api/v1/inference/stream} sends): the same tokens and text as the
 * answer, refusals before anything runs, and a cancelled generation (a client gone) ending the task as failed and
 * freeing its KV caches.
 */
class StreamedGenerationTest {

    /** What the scripted last stage makes the greedy choice at each step: "the" then a three-byte character. */
    private long[] script;

    private ScriptedCluster cluster;
    private Tokenizer tokenizer;
    private ScriptedPipeline steps;

    @BeforeEach
    void ready(@TempDir Path dir) throws Exception {
        cluster = new ScriptedCluster(dir);
        tokenizer = cluster.tokenizer();
        script = cluster.wordThenCheckMark();
        steps = ScriptedCluster.following(script);
    }

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void eachTokenIsToldAsItIsChosenAndThePiecesMakeTheAnswer() {
        InferenceService service = service();
        List<GeneratedToken> told = new ArrayList<>();
        GenerationResult result = InferenceService.await(service.submit(request(script.length), told::add).result());

        assertThat(told).extracting(GeneratedToken::index).containsExactly(
                java.util.stream.IntStream.range(0, script.length).boxed().toArray(Integer[]::new));
        assertThat(told).extracting(GeneratedToken::tokenId).containsExactlyElementsOf(result.tokenIds());
        assertThat(result.tokenIds()).containsExactly(java.util.Arrays.stream(script).boxed().toArray(Long[]::new));
        assertThat(told).extracting(GeneratedToken::logprob).containsExactlyElementsOf(result.tokenLogprobs());
        assertThat(told).allSatisfy(t -> assertThat(t.taskId()).isEqualTo(result.taskId()));
        assertThat(told.stream().map(GeneratedToken::text).reduce("", String::concat)).isEqualTo(result.text())
                .isEqualTo("the✓");
        // The character's first two bytes settle no text; its last gives all of it.
        assertThat(told.get(script.length - 3).text()).isEmpty();
        assertThat(told.get(script.length - 2).text()).isEmpty();
        assertThat(told.get(script.length - 1).text()).isEqualTo("✓");
        assertThat(cluster.recorded().tasks().get(result.taskId()).state()).isEqualTo(TaskRecord.State.COMPLETED);
    }

    @Test
    void aStopStringEndsTheGenerationAndIsLeftOutOfItsText() {
        InferenceService service = service();
        List<GeneratedToken> told = new ArrayList<>();
        GenerationRequest stopAtMark = new GenerationRequest(null, List.of(1L, 17L), script.length + 5, 0.0, null, null,
                null, true, List.of("✓"));
        GenerationResult result = InferenceService.await(service.submit(stopAtMark, told::add).result());

        assertThat(result.finishReason()).isEqualTo("stop");
        assertThat(result.text()).isEqualTo("the");
        // The tokens that formed the stop string are the answer's last ones.
        assertThat(result.tokenIds()).containsExactly(java.util.Arrays.stream(script).boxed().toArray(Long[]::new));
        assertThat(told.stream().map(GeneratedToken::text).reduce("", String::concat)).isEqualTo("the");
        assertThat(cluster.recorded().tasks().get(result.taskId()).state()).isEqualTo(TaskRecord.State.COMPLETED);
        // Without a listener the same.
        GenerationResult plain = service.generate(stopAtMark);
        assertThat(plain.text()).isEqualTo("the");
        assertThat(plain.tokenIds()).isEqualTo(result.tokenIds());
    }

    /** A stop string across tokens: its first part is held back, never told, and the text ends before it. */
    @Test
    void aStopStringAcrossTokensIsNeverTold() {
        InferenceService service = service();
        String whole = tokenizer.decode(script); // "the✓"
        String stop = whole.substring(whole.length() - 2); // "e✓": "e" ends the word token, "✓" takes three more
        List<GeneratedToken> told = new ArrayList<>();
        GenerationResult result = InferenceService.await(service.submit(new GenerationRequest(null, List.of(1L, 17L),
                script.length + 5, 0.0, null, null, null, true, List.of(stop)), told::add).result());
        String expected = whole.substring(0, whole.length() - 2);
        assertThat(result.text()).isEqualTo(expected);
        assertThat(result.finishReason()).isEqualTo("stop");
        assertThat(told.stream().map(GeneratedToken::text).reduce("", String::concat)).isEqualTo(expected);
        assertThat(told).noneMatch(t -> t.text().contains("e"));
    }

    @Test
    void stopStringsAreChecked() {
        InferenceService service = service();
        assertThatThrownBy(() -> service.submit(new GenerationRequest(null, List.of(1L), 3, 0.0, null, null, null, null,
                List.of("a", "")), null)).isInstanceOfSatisfying(InvalidRequestException.class,
                e -> assertThat(e.field()).isEqualTo("stop[1]"));
        assertThatThrownBy(() -> service.submit(new GenerationRequest(null, List.of(1L), 3, 0.0, null, null, null, null,
                List.of("a", "b", "c", "d", "e")), null)).isInstanceOfSatisfying(InvalidRequestException.class,
                e -> assertThat(e.field()).isEqualTo("stop"));
        assertThatThrownBy(() -> service.submit(new GenerationRequest(null, List.of(1L), 3, 0.0, null, null, null, null,
                List.of("x".repeat(257))), null)).isInstanceOfSatisfying(InvalidRequestException.class,
                e -> assertThat(e.field()).isEqualTo("stop[0]"));
        assertThatThrownBy(() -> service.submit(new GenerationRequest(null, List.of(1L), 3, 0.0, null, null, null, null,
                java.util.Arrays.asList("a", null)), null)).isInstanceOfSatisfying(InvalidRequestException.class,
                e -> assertThat(e.field()).isEqualTo("stop[1]"));
        assertThat(cluster.recorded().tasks()).isEmpty();
    }

    @Test
    void aCancelledGenerationEndsAsFailedAndIsFreedOnTheStages() {
        InferenceService service = service();
        AtomicInteger told = new AtomicInteger();
        java.util.concurrent.atomic.AtomicReference<RequestHandle> handle = new java.util.concurrent.atomic.AtomicReference<>();
        InferenceService.Prepared prepared = service.prepare(request(50), t -> {
            if (told.incrementAndGet() == 2) {
                handle.get().cancel("the client closed the stream");
            }
        });
        handle.set(prepared.handle());
        service.submit(prepared);
        assertThatThrownBy(() -> InferenceService.await(handle.get().result())).hasMessage("the client closed the stream");

        assertThat(told.get()).as("it ends at its next step").isLessThanOrEqualTo(3);
        TaskRecord task = cluster.recorded().tasks().values().iterator().next();
        assertThat(task.state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(task.error()).isEqualTo("the client closed the stream");
        long deadline = System.nanoTime() + 5_000_000_000L; // released off the engine's thread
        while (!steps.released().contains(handle.get().taskId()) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertThat(steps.released()).contains(handle.get().taskId());
        assertThat(service.running()).isZero();
        assertThat(service.generate(request(2)).tokenIds()).hasSize(2);
    }

    /**
     * Three requests run in one micro-batch; one client goes away while a step is out. Its sequence leaves at the next
     * step (never sent again), is freed on the stages, and the other two finish with every token, as alone.
     */
    @Test
    void aDisconnectMidBatchLeavesTheOthersRunning() {
        InferenceService service = service();
        GenerationResult alone = service.generate(request(6));
        steps.hold();
        List<InferenceService.Prepared> three = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            three.add(service.prepare(request(6), null));
        }
        List<RequestHandle> handles = service.submitAll(three); // queued together: one micro-batch
        awaitSent(s -> s.sequences().size() == 3);
        RequestHandle gone = handles.get(1);
        gone.cancel("the client closed the stream");
        steps.releaseHeld(); // the step that carried it comes back; from then on answers come at once

        assertThatThrownBy(() -> InferenceService.await(gone.result())).hasMessage("the client closed the stream");
        for (RequestHandle kept : List.of(handles.get(0), handles.get(2))) {
            assertThat(InferenceService.await(kept.result()).tokenIds()).isEqualTo(alone.tokenIds());
        }
        int lastWithIt = -1;
        for (int i = 0; i < steps.sent().size(); i++) {
            if (steps.sent().get(i).sequences().stream().anyMatch(q -> q.sequenceId().equals(gone.taskId()))) {
                lastWithIt = i;
            }
        }
        assertThat(steps.sent().get(lastWithIt).sequences()).as("it was in no step after the one it was cancelled in")
                .hasSize(3);
        assertThat(steps.sent().subList(lastWithIt + 1, steps.sent().size())).as("the others ran on").isNotEmpty();
        long deadline = System.nanoTime() + 5_000_000_000L; // released off the engine's thread
        while (!steps.released().contains(gone.taskId()) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertThat(steps.released()).contains(gone.taskId());
        assertThat(cluster.recorded().tasks().get(gone.taskId()).state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(service.running()).isZero();
    }

    private void awaitSent(java.util.function.Predicate<StepInput> step) {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (steps.sent().stream().noneMatch(step)) {
            assertThat(System.nanoTime()).as("a step as expected was sent").isLessThan(deadline);
            Thread.onSpinWait();
        }
    }

    @Test
    void aRefusedRequestRunsNothing() {
        InferenceService service = service();
        assertThatThrownBy(() -> service.submit(new GenerationRequest(null, List.of(1L, 512L), 3, 0.0, null, null, null,
                null), null)).isInstanceOfSatisfying(InvalidRequestException.class, e -> assertThat(e.field()).isEqualTo("token_ids[1]"));
        assertThat(steps.sent()).isEmpty();
        assertThat(cluster.recorded().tasks()).isEmpty();
        service.prepare(request(2), null); // prepared, never queued: nothing runs
        assertThat(steps.sent()).isEmpty();
        assertThat(service.generate(request(2)).tokenIds()).hasSize(2);
    }

    /** Whether the cluster serves is judged at admission (the task is recorded later, off the request's path): 409. */
    @Test
    void aClusterThatDoesNotServeRefusesAtAdmissionAndRecordsNothing() {
        InferenceService service = service();
        cluster.control().submit(new ClusterCommand.LoadFailed("w1", 1, "OUT_OF_MEMORY", "x", 9));
        assertThatThrownBy(() -> service.submit(request(2), null)).isInstanceOf(NotServingException.class)
                .hasMessageContaining("DEGRADED");
        assertThat(steps.sent()).isEmpty();
        assertThat(cluster.recorded().tasks()).isEmpty();
    }

    private static GenerationRequest request(int maxTokens) {
        return new GenerationRequest(null, List.of(1L, 17L), maxTokens, 0.0, null, null, null, true);
    }

    private InferenceService service() {
        return cluster.service(steps);
    }
}
