package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.StepInput;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.cluster.TaskRequest;
import io.butterfly.coordinator.statemachine.SystemState;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A generation survives losing its stages and its replica: paused sequences replay their history into new caches,
 * cut exactly as the first time, and go on with the tokens a run without the failure gives (greedy and seeded
 * sampling), each told to its client once, in order; a client that lost its stream gets the rest from this replica,
 * from the record of an ended task, or by taking the task over from a replica that is gone; a request repeated with
 * its idempotency key gets the same generation, never a second. The pipeline's model is the whole history
 * ({@link HistoryPipeline}), so a replay that fed anything else would give other tokens.
 */
class ResumeTest {

    private static final int MAX_TOKENS = 24;

    private ScriptedCluster cluster;
    private HistoryPipeline pipeline;

    @BeforeEach
    void ready(@TempDir Path dir) throws Exception {
        cluster = new ScriptedCluster(dir);
        pipeline = pipeline();
    }

    @AfterEach
    void close() {
        cluster.close();
        pipeline.close();
    }

    private static HistoryPipeline pipeline() {
        return new HistoryPipeline(ScriptedCluster.TINY.vocabSize(), ScriptedCluster.TINY.eosTokenId());
    }

    /**
     * Seeded rounds: four concurrent streamed generations (greedy and temperature 0.8, prompts across the 32-token
     * chunk boundary) lose the pipeline at a random token, which comes back a little later with every cache lost.
     */
    @Test
    void sequencesPausedByALostStageReplayTheirHistoryAndGiveTheTokensOfARunWithoutTheFailure() throws Exception {
        for (long seed = 1; seed <= 3; seed++) {
            Random rnd = new Random(seed);
            List<GenerationRequest> requests = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                requests.add(request(rnd.longs(1 + rnd.nextInt(45), 3, 500).boxed().toList(), i % 2 == 0 ? 0.0 : 0.8,
                        rnd.nextLong()));
            }
            Reference reference = reference(requests);

            InferenceService service = cluster.service(pipeline);
            List<List<GeneratedToken>> told = new ArrayList<>();
            List<RequestHandle> handles = new ArrayList<>();
            int failAt = 1 + rnd.nextInt(40);
            java.util.concurrent.atomic.AtomicInteger tokens = new java.util.concurrent.atomic.AtomicInteger();
            for (GenerationRequest r : requests) {
                List<GeneratedToken> mine = new CopyOnWriteArrayList<>();
                told.add(mine);
                handles.add(service.submit(r, t -> {
                    mine.add(t);
                    if (tokens.incrementAndGet() == failAt) {
                        pipeline.down = true; // a stage's process dies: its caches with it
                    }
                }));
            }
            awaitTrue(() -> pipeline.down);
            Thread.sleep(300);
            pipeline.down = false;

            for (int i = 0; i < requests.size(); i++) {
                GenerationResult result = InferenceService.await(handles.get(i).result());
                String what = "seed " + seed + ", request " + i + " (failure at token " + failAt + ")";
                assertThat(result.tokenIds()).as(what).isEqualTo(reference.tokens.get(i));
                assertThat(told.get(i)).as(what + ": each token told once, in order")
                        .extracting(GeneratedToken::index).containsExactlyElementsOf(range(MAX_TOKENS));
                assertThat(told.get(i)).extracting(GeneratedToken::tokenId).containsExactlyElementsOf(result.tokenIds());
                assertThat(pipeline.attempts(result.taskId())).as(what + ": replayed under its own id").hasSize(1);
                List<StepInput.Slice> lastRun = pipeline.lastRun(result.taskId());
                assertThat(lastRun).extracting(c -> List.of(c.position(), c.numTokens()))
                        .as(what + ": the last replay's steps are cut as a run without the failure cuts them")
                        .isEqualTo(reference.pipeline.cuts(reference.taskIds.get(i)));
                assertLogitsAskedOnlyWhereATokenIsSampled(lastRun, requests.get(i).tokenIds().size(), what);
                assertThat(cluster.recorded().tasks().get(result.taskId()).tokenIds()).isEqualTo(result.tokenIds());
            }
            assertThat(pipeline.conflicts).isEmpty();
            assertThat(handles).as("some were paused").anySatisfy(h -> assertThat(pipeline.runs(h.taskId())).isGreaterThan(1));
            pipeline.close();
            pipeline = pipeline();
        }
    }

    /**
     * A pause that cost no cache (the pipeline comes back with every cache, as stages that kept theirs do): the replay
     * runs under the same ids, the pipeline answers the replayed history from its caches, and the tokens are those of
     * a run without the failure.
     */
    @Test
    void aReplayIntoCachesThatWereKeptIsAnsweredFromThem() throws Exception {
        List<GenerationRequest> requests = List.of(request(List.of(4L, 8L, 15L, 16L, 23L), 0.0, 0),
                request(List.of(42L, 7L), 0.8, 99));
        Reference reference = reference(requests);
        pipeline.keepsCaches = true;
        InferenceService service = cluster.service(pipeline);
        java.util.concurrent.atomic.AtomicInteger tokens = new java.util.concurrent.atomic.AtomicInteger();
        List<RequestHandle> handles = new ArrayList<>();
        for (GenerationRequest r : requests) {
            handles.add(service.submit(r, t -> {
                if (tokens.incrementAndGet() == 9) {
                    pipeline.down = true;
                }
            }));
        }
        awaitTrue(() -> pipeline.down);
        Thread.sleep(300);
        pipeline.down = false;
        for (int i = 0; i < requests.size(); i++) {
            GenerationResult result = InferenceService.await(handles.get(i).result());
            assertThat(result.tokenIds()).isEqualTo(reference.tokens.get(i));
            assertThat(pipeline.attempts(result.taskId())).hasSize(1);
        }
        assertThat(handles).as("some were paused").anySatisfy(h -> assertThat(pipeline.runs(h.taskId())).isGreaterThan(1));
        assertThat(pipeline.answered.get()).as("replayed tokens answered from the kept caches").isPositive();
        assertThat(pipeline.conflicts).isEmpty();
    }

    /** While the cluster is DEGRADED nothing is sent; once READY again the paused sequences resume. */
    @Test
    void pausedSequencesWaitForTheClusterToServeAgain() throws Exception {
        GenerationRequest request = request(List.of(5L, 6L, 7L), 0.8, 42);
        Reference reference = reference(List.of(request));
        InferenceService service = cluster.service(pipeline);
        Set<String> pausedInTheLog = ConcurrentHashMap.newKeySet();
        cluster.control().onApplied((before, after, command, index) -> after.tasks().values().stream()
                .filter(TaskRecord::paused).forEach(t -> pausedInTheLog.add(t.taskId())));
        RequestHandle handle = service.submit(request, t -> {
            if (t.index() == 5) {
                pipeline.down = true;
            }
        });
        awaitTrue(() -> service.paused() == 1);
        cluster.control().submit(new ClusterCommand.NodeSuspected("w2", 0, 9, "no heartbeat", 10));
        cluster.control().submit(new ClusterCommand.NodeFailed("w2", 0, 12, "no heartbeat", 11));
        assertThat(cluster.control().state().system()).isEqualTo(SystemState.DEGRADED);
        pipeline.down = false;
        Thread.sleep(2_500); // past any backoff: nothing is sent while the cluster does not serve
        int ranWhileDegraded = pipeline.ran.size();
        Thread.sleep(300);
        assertThat(pipeline.ran).hasSize(ranWhileDegraded);
        assertThat(cluster.recorded().tasks().get(handle.taskId()).paused()).isTrue();

        cluster.control().submit(new ClusterCommand.NodeRecovered("w2", true, 12, 13));
        assertThat(cluster.control().state().system()).isEqualTo(SystemState.READY);
        GenerationResult result = InferenceService.await(handle.result());
        assertThat(result.tokenIds()).isEqualTo(reference.tokens.get(0));
        assertThat(pausedInTheLog).containsExactly(handle.taskId());
        assertThat(cluster.recorded().tasks().get(handle.taskId()).paused()).as("resumed").isFalse();
    }

    @Test
    void aGenerationThatCannotResumeWithinTheRecoveryTimeoutFailsWithTheErrorThatPausedIt() {
        InferenceService service = cluster.service(pipeline, ScriptedCluster.SCHEDULING, Duration.ofMillis(500));
        RequestHandle handle = service.submit(request(List.of(5L, 6L), 0.0, 0), t -> pipeline.down = true);
        assertThatThrownBy(() -> InferenceService.await(handle.result()))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.kind()).isEqualTo(ErrorKind.UNAVAILABLE);
                    assertThat(e.getMessage()).contains("could not resume within").contains("stage w2 is gone");
                });
        assertThat(cluster.recorded().tasks().get(handle.taskId()).state()).isEqualTo(TaskRecord.State.FAILED);
    }

    /** A client whose stream broke comes back to the replica that runs its task: it gets the rest, each token once. */
    @Test
    void aClientThatComesBackGetsTheRestOfTheGenerationOnce() throws Exception {
        GenerationRequest request = request(List.of(9L, 8L, 7L, 6L), 0.8, 7);
        Reference reference = reference(List.of(request));
        InferenceService service = cluster.service(pipeline);
        List<GeneratedToken> first = new CopyOnWriteArrayList<>();
        RequestHandle handle = service.submit(request, first::add);
        awaitTrue(() -> first.size() >= 5);
        List<GeneratedToken> second = new CopyOnWriteArrayList<>();
        int seen = first.get(4).index();
        RequestHandle again = service.resume(handle.taskId(), seen, request, second::add);

        GenerationResult result = InferenceService.await(again.result());
        assertThat(result.tokenIds()).isEqualTo(reference.tokens.get(0));
        assertThat(second).extracting(GeneratedToken::index).containsExactlyElementsOf(range(MAX_TOKENS).subList(seen + 1, MAX_TOKENS));
        assertThat(pipeline.attempts(handle.taskId())).as("it never stopped").hasSize(1);
    }

    /**
     * Issue 47, item 5: a client that left (its stream detached) and comes back with the same request but another seed
     * (an OpenAI client that sent none gets a fresh one per HTTP request) gets the rest of the generation sampled with
     * the seed recorded when the task was first accepted: the tokens of a run without the break.
     */
    @Test
    void aResumeGoesOnWithTheSeedRecordedWhenTheTaskWasFirstAccepted() throws Exception {
        GenerationRequest request = request(List.of(9L, 8L, 7L, 6L), 0.9, 7);
        Reference reference = reference(List.of(request));
        InferenceService service = cluster.service(pipeline);
        List<GeneratedToken> first = new CopyOnWriteArrayList<>();
        RequestHandle[] handle = new RequestHandle[1];
        handle[0] = service.submit(request, t -> {
            first.add(t);
            if (first.size() == 5) {
                handle[0].detach("the client closed the stream");
            }
        });
        awaitTrue(() -> first.size() >= 5 && cluster.recorded().tasks().get(handle[0].taskId()).paused());

        List<GeneratedToken> second = new CopyOnWriteArrayList<>();
        GenerationRequest withAnotherSeed = request(request.tokenIds(), 0.9, 123_456);
        RequestHandle again = service.resume(handle[0].taskId(), 4, withAnotherSeed, second::add);

        GenerationResult result = InferenceService.await(again.result());
        assertThat(result.tokenIds()).isEqualTo(reference.tokens.get(0));
        assertThat(second).extracting(GeneratedToken::tokenId)
                .containsExactlyElementsOf(reference.tokens.get(0).subList(5, MAX_TOKENS));
    }

    /**
     * Replica coordinator-1 ran the task and is gone, its progress recorded: the client comes back here, which takes
     * the task over, replays the recorded tokens and generates the rest, the tokens a run without the failure gives.
     */
    @Test
    void aTaskWhoseReplicaIsGoneIsTakenOverReplayedAndFinishedWithTheSameTokens() throws Exception {
        takenOverAfter(6);
    }

    /**
     * The client got further than the record (its owner died within a flush interval): the tokens between are
     * generated again here but not sent again, each token reaches the client once.
     */
    @Test
    void aClientAheadOfTheRecordGetsEachTokenOnceFromTheReplicaThatTookItOver() throws Exception {
        takenOverAfter(14);
    }

    private void takenOverAfter(int clientHas) throws Exception {
        List<Long> prompt = new Random(5).longs(40, 3, 500).boxed().toList();
        GenerationRequest request = request(prompt, 0.8, 99);
        Reference reference = reference(List.of(request));
        List<Long> expected = reference.tokens.get(0);
        int recorded = 11;
        GroupCommitTaskJournal gone = GroupCommitTaskJournal.start(cluster.control(),
                new GroupCommitTaskJournal.Settings("coordinator-1", Duration.ofMillis(5), Duration.ofMillis(5),
                        256, 1_000), Clock.systemUTC());
        gone.started("t-1", TaskRequest.of(prompt, MAX_TOKENS, 0.8, 1, 0, 99, 0, false, List.of(), null), 1);
        for (int i = 0; i < recorded; i++) {
            gone.progressed("t-1", i, new TaskEvent.Token(expected.get(i), -1.5, List.of()), 2);
        }
        gone.close();

        InferenceService service = cluster.service(pipeline);
        List<GeneratedToken> told = new CopyOnWriteArrayList<>();
        RequestHandle handle = service.resume("t-1", clientHas, request, told::add);
        GenerationResult result = InferenceService.await(handle.result());

        assertThat(result.taskId()).isEqualTo("t-1");
        assertThat(result.tokenIds()).isEqualTo(expected);
        assertThat(result.tokenLogprobs().subList(0, recorded)).as("the recorded ones").containsOnly(-1.5);
        assertThat(told).extracting(GeneratedToken::index)
                .containsExactlyElementsOf(range(MAX_TOKENS).subList(clientHas + 1, MAX_TOKENS));
        List<String> attempts = pipeline.attempts("t-1");
        assertThat(attempts).hasSize(1);
        assertThat(pipeline.cuts(attempts.get(0))).isEqualTo(reference.pipeline.cuts(reference.taskIds.get(0)));
        TaskRecord t = cluster.recorded().tasks().get("t-1");
        assertThat(t.owner()).isEqualTo("coordinator-0");
        assertThat(t.state()).isEqualTo(TaskRecord.State.COMPLETED);
        assertThat(t.tokenIds()).isEqualTo(expected);
    }

    /**
     * A JSON-schema generation taken over from a replica that is gone: the recorded tokens replayed here bring the
     * grammar to where the first replica left it (a grammar started afresh would allow other tokens), so it goes on
     * with the tokens of a run without the failure.
     */
    @Test
    void aTakenOverJsonSchemaGenerationRebuildsItsGrammarFromTheRecordedTokens() throws Exception {
        List<Long> prompt = new Random(7).longs(20, 3, 500).boxed().toList();
        ResponseFormat format = ResponseFormat.parse(tools.jackson.databind.json.JsonMapper.builder().build().readTree("""
                {"type": "json_schema", "json_schema": {"name": "s", "strict": true, "schema": {"type": "object",
                 "properties": {"a": {"type": "string", "maxLength": 40}, "b": {"type": "integer"}},
                 "required": ["a", "b"], "additionalProperties": false}}}"""), "response_format");
        GenerationRequest request = new GenerationRequest(null, prompt, MAX_TOKENS, 0.8, null, null, 42L, null, false,
                null, format);
        List<Long> expected = reference(List.of(request)).tokens.get(0);
        GroupCommitTaskJournal gone = GroupCommitTaskJournal.start(cluster.control(),
                new GroupCommitTaskJournal.Settings("coordinator-1", Duration.ofMillis(5), Duration.ofMillis(5),
                        256, 1_000), Clock.systemUTC());
        gone.started("t-1", TaskRequest.of(prompt, MAX_TOKENS, 0.8, 1, 0, 42, 0, false, List.of(), null)
                .withResponseFormat(format.recorded()), 1);
        for (int i = 0; i < 9; i++) {
            gone.progressed("t-1", i, new TaskEvent.Token(expected.get(i), -1.5, List.of()), 2);
        }
        gone.close();

        GenerationResult result = InferenceService.await(cluster.service(pipeline)
                .resume("t-1", 8, request, token -> { }).result());
        assertThat(result.tokenIds()).isEqualTo(expected);
        assertThat(result.text()).startsWith("{\"a\":\"");
    }

    /** An ended task answers from its record: the tokens the client missed, then the same answer; nothing runs. */
    @Test
    void anEndedTaskIsAnsweredFromItsRecord() throws Exception {
        GenerationRequest request = request(List.of(4L, 5L), 0.0, 0);
        InferenceService service = cluster.service(pipeline);
        GenerationResult done = InferenceService.await(service.submit(request, t -> { }).result());
        cluster.recorded();
        int ran = pipeline.ran.size();

        List<GeneratedToken> told = new CopyOnWriteArrayList<>();
        GenerationResult again = InferenceService.await(service.resume(done.taskId(), 19, request, told::add).result());
        assertThat(again.tokenIds()).isEqualTo(done.tokenIds());
        assertThat(again.text()).isEqualTo(done.text());
        assertThat(again.tokenLogprobs()).isEqualTo(done.tokenLogprobs());
        assertThat(told).extracting(GeneratedToken::index).containsExactly(20, 21, 22, 23);
        assertThat(told.stream().map(GeneratedToken::text).toList()).isNotEmpty();
        assertThat(pipeline.ran).hasSize(ran);
    }

    @Test
    void aRequestRepeatedWithItsIdempotencyKeyGetsTheSameGenerationNeverASecond() {
        GenerationRequest request = request(List.of(4L, 5L, 6L), 0.8, 3);
        InferenceService service = cluster.service(pipeline);
        GenerationResult first = InferenceService.await(service.submitOnce(request, "order-17", null).result());
        int ran = pipeline.ran.size();
        GenerationResult repeat = InferenceService.await(service.submitOnce(request, "order-17", null).result());
        assertThat(repeat.taskId()).isEqualTo(first.taskId());
        assertThat(repeat.tokenIds()).isEqualTo(first.tokenIds());
        assertThat(pipeline.ran).as("no second generation").hasSize(ran);
        assertThat(cluster.recorded().tasks()).hasSize(1);

        assertThatThrownBy(() -> service.submitOnce(request(List.of(4L, 5L), 0.8, 3), "order-17", null))
                .isInstanceOfSatisfying(InvalidRequestException.class,
                        e -> assertThat(e.field()).isEqualTo("Idempotency-Key"));
        assertThatThrownBy(() -> service.submitOnce(request, "bad key", null))
                .isInstanceOfSatisfying(InvalidRequestException.class,
                        e -> assertThat(e.field()).isEqualTo("Idempotency-Key"));
    }

    @Test
    void aReconnectWithAnotherRequestIsRefusedNamingTheHeader() {
        InferenceService service = cluster.service(pipeline);
        GenerationResult done = InferenceService.await(service.submit(request(List.of(4L, 5L), 0.0, 0), null).result());
        cluster.recorded();
        assertThatThrownBy(() -> service.resume(done.taskId(), 3, request(List.of(4L, 6L), 0.0, 0), t -> { }))
                .isInstanceOfSatisfying(InvalidRequestException.class,
                        e -> assertThat(e.field()).isEqualTo("Last-Event-ID"));
    }

    /** Each request run alone, in a fresh pipeline: the tokens and step cuts a run without a failure gives. */
    private Reference reference(List<GenerationRequest> requests) {
        HistoryPipeline alone = pipeline();
        InferenceService service = cluster.service(alone);
        Reference ref = new Reference(alone, new ArrayList<>(), new ArrayList<>());
        for (GenerationRequest r : requests) {
            GenerationResult result = InferenceService.await(service.submit(r, null).result());
            ref.tokens.add(result.tokenIds());
            ref.taskIds.add(result.taskId());
        }
        alone.close();
        return ref;
    }

    private record Reference(HistoryPipeline pipeline, List<List<Long>> tokens, List<String> taskIds) {
    }

    /**
     * An attempt's steps skip the head up to the end of its history (the prompt and, on a replay, the tokens generated
     * before the pause) and ask for logits from then on, one step per token still to come.
     */
    private static void assertLogitsAskedOnlyWhereATokenIsSampled(List<StepInput.Slice> slices, int promptLength,
                                                                   String what) {
        int firstSampling = 0;
        while (firstSampling < slices.size() && slices.get(firstSampling).skipLogits()) {
            firstSampling++;
        }
        assertThat(slices.subList(firstSampling, slices.size())).as(what + ": no step skips logits after one asked")
                .noneMatch(StepInput.Slice::skipLogits);
        StepInput.Slice first = slices.get(firstSampling);
        int generatedBefore = first.position() + first.numTokens() - promptLength;
        assertThat(slices.size() - firstSampling).as(what + ": steps asking for logits")
                .isEqualTo(MAX_TOKENS - generatedBefore);
    }

    private static GenerationRequest request(List<Long> prompt, double temperature, long seed) {
        return new GenerationRequest(null, prompt, MAX_TOKENS, temperature, null, seed, null, false);
    }

    private static List<Integer> range(int n) {
        return IntStream.range(0, n).boxed().toList();
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out");
            }
            Thread.sleep(5);
        }
    }
}
