package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.inference.ScriptedCluster;
import io.butterfly.coordinator.inference.ScriptedPipeline;
import io.butterfly.coordinator.inference.engine.StepResult;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.http.MediaType;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The stream's lifecycle around a real inference service and control log, with scripted pipeline steps: a refusal
 * at the first step is answered before the stream starts (so it keeps its status), a failure after it is the stream's
 * last event, and a coordinator that stops leaves its streamed tasks paused, resumable elsewhere, and tells their
 * clients so.
 */
class InferenceStreamsTest {

    private static final ModelConfig CONFIG = ScriptedCluster.TINY;

    private ScriptedCluster cluster;
    private final AtomicInteger stepsRun = new AtomicInteger();

    @BeforeEach
    void ready(@TempDir Path dir) throws Exception {
        cluster = new ScriptedCluster(dir);
    }

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void aStageRefusingTheFirstStepIsAnsweredBeforeTheStreamStarts() {
        AtomicBoolean refuse = new AtomicBoolean(true);
        InferenceService service = cluster.service(ScriptedPipeline.answering(in -> {
            if (refuse.get()) {
                throw new ButterflyException(ErrorCode.INSUFFICIENT_MEMORY, ErrorKind.RESOURCE_EXHAUSTED,
                        "the KV cache budget of worker w2 is spent");
            }
            return step();
        }));
        InferenceStreams streams = new InferenceStreams(service, ReadyCluster.props("coordinator-0"));

        // Thrown to the handler (429 with Retry-After), not a 200 stream.
        assertThat(streams.start(request(5), null, task -> new NativeStreamFormat(false)))
                .failsWithin(10, TimeUnit.SECONDS).withThrowableOfType(ExecutionException.class)
                .havingCause().isInstanceOfSatisfying(ButterflyException.class,
                        e -> assertThat(e.kind()).isEqualTo(ErrorKind.RESOURCE_EXHAUSTED));
        awaitTasksEnded(1);
        assertThat(onlyTask().state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(onlyTask().error()).contains("KV cache budget");

        refuse.set(false);
        assertThat(streams.start(request(3), null, task -> new NativeStreamFormat(false))).succeedsWithin(10, TimeUnit.SECONDS);
        awaitTasksEnded(2);
    }

    @Test
    void streamsStartedRunToTheEndAfterTheirFirstToken() {
        InferenceStreams streams = new InferenceStreams(cluster.service(ScriptedPipeline.answering(in -> step())),
                ReadyCluster.props("coordinator-0"));
        assertThat(streams.start(request(6), null, task -> new NativeStreamFormat(true))).succeedsWithin(10, TimeUnit.SECONDS);
        assertThat(stepsRun.get()).isPositive(); // started only after the first token
        awaitTasksEnded(1);
        assertThat(onlyTask().state()).isEqualTo(TaskRecord.State.COMPLETED);
        assertThat(onlyTask().generatedTokens()).isEqualTo(6);
    }

    /**
     * The status line was sent long before: the failure is the stream's last event, a problem document. (A failure a
     * new plan can mend, such as a stage gone, pauses the generation instead: see ResumeTest.)
     */
    @Test
    void aFailureAfterTheFirstTokenIsTheStreamsLastEvent() throws Exception {
        InferenceService service = cluster.service(ScriptedPipeline.answering(in -> {
            if (stepsRun.get() == 2) {
                throw new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.INTERNAL, "worker w2 broke");
            }
            return step();
        }));
        MockMvc mvc = MockMvcBuilders.standaloneSetup(new InferenceController(service,
                new InferenceStreams(service, ReadyCluster.props("coordinator-0")))).setControllerAdvice(new ProblemHandler())
                .build();
        MockHttpServletResponse r = AsyncMvc.perform(mvc, post("/api/v1/inference/stream")
                .contentType(MediaType.APPLICATION_JSON).content("{\"token_ids\": [1, 17], \"max_tokens\": 8}"));

        String[] lines = r.getContentAsString(StandardCharsets.UTF_8).split("\n");
        assertThat(lines).filteredOn(l -> l.startsWith("event:"))
                .containsExactly("event:token", "event:token", "event:error");
        String error = lines[lines.length - 1]; // data:{...} of the last event
        assertThat(error).startsWith("data:");
        JsonNode problem = JsonMapper.builder().build().readTree(error.substring("data:".length()));
        assertThat(problem.path("status").asInt()).isEqualTo(502);
        assertThat(problem.path("type").asString()).isEqualTo("about:blank");
        assertThat(problem.path("title").asString()).isEqualTo("Cluster error");
        assertThat(problem.path("detail").asString()).contains("worker w2 broke");
        assertThat(problem.path("error_code").asString()).isEqualTo("INTERNAL_ERROR");
        assertThat(onlyTask().state()).isEqualTo(TaskRecord.State.FAILED);
    }

    /**
     * Token events carry ids; the same request with {@code Last-Event-ID} streams the rest of the same generation (here
     * from its record: it ended), and an id this service did not write is refused naming the header. A plain request
     * repeated with its {@code Idempotency-Key} answers the same generation.
     */
    @Test
    void lastEventIdStreamsTheRestAndAnIdempotencyKeyAnswersTheSameGeneration() throws Exception {
        InferenceService service = cluster.service(ScriptedPipeline.answering(in -> step()));
        MockMvc mvc = MockMvcBuilders.standaloneSetup(new InferenceController(service,
                new InferenceStreams(service, ReadyCluster.props("coordinator-0")))).setControllerAdvice(new ProblemHandler())
                .build();
        String body = "{\"token_ids\": [1, 17], \"max_tokens\": 6}";
        List<String> first = lines(AsyncMvc.perform(mvc, post("/api/v1/inference/stream")
                .contentType(MediaType.APPLICATION_JSON).content(body)));
        List<String> ids = first.stream().filter(l -> l.startsWith("id:")).toList();
        assertThat(ids).hasSize(6);
        String task = ids.get(0).substring(3, ids.get(0).lastIndexOf(':'));
        assertThat(ids).containsExactlyElementsOf(IntStream.range(0, 6).mapToObj(i -> "id:" + task + ":" + i).toList());
        cluster.recorded();

        List<String> rest = lines(AsyncMvc.perform(mvc, post("/api/v1/inference/stream").header("Last-Event-ID", task + ":3")
                .contentType(MediaType.APPLICATION_JSON).content(body)));
        assertThat(rest.stream().filter(l -> l.startsWith("id:")))
                .containsExactly("id:" + task + ":4", "id:" + task + ":5");
        List<String> firstData = first.stream().filter(l -> l.startsWith("data:")).toList();
        List<String> restData = rest.stream().filter(l -> l.startsWith("data:")).toList();
        assertThat(restData.subList(0, 2)).as("the same token events").isEqualTo(firstData.subList(4, 6));
        JsonMapper json = JsonMapper.builder().build();
        JsonNode done = json.readTree(restData.get(2).substring(5));
        JsonNode doneFirst = json.readTree(firstData.get(6).substring(5));
        for (String field : List.of("task_id", "token_ids", "text", "finish_reason", "token_logprobs", "usage")) {
            assertThat(done.path(field)).as("the same answer: " + field).isEqualTo(doneFirst.path(field));
        }

        MockHttpServletResponse bad = AsyncMvc.perform(mvc, post("/api/v1/inference/stream").header("Last-Event-ID", "7")
                .contentType(MediaType.APPLICATION_JSON).content(body));
        assertThat(bad.getStatus()).isEqualTo(400);
        assertThat(bad.getContentAsString()).contains("\"field\":\"Last-Event-ID\"");

        String once = AsyncMvc.perform(mvc, post("/api/v1/inference").header("Idempotency-Key", "k-7")
                .contentType(MediaType.APPLICATION_JSON).content(body)).getContentAsString();
        String again = AsyncMvc.perform(mvc, post("/api/v1/inference").header("Idempotency-Key", "k-7")
                .contentType(MediaType.APPLICATION_JSON).content(body)).getContentAsString();
        assertThat(json.readTree(again).path("task_id")).isEqualTo(json.readTree(once).path("task_id"));
        assertThat(json.readTree(again).path("token_ids")).isEqualTo(json.readTree(once).path("token_ids"));
    }

    private static List<String> lines(MockHttpServletResponse r) throws Exception {
        return List.of(r.getContentAsString(StandardCharsets.UTF_8).split("\n"));
    }

    @Test
    void aStoppingCoordinatorLeavesItsStreamedTasksPausedWithTheirProgress() throws Exception {
        InferenceService service = cluster.service(ScriptedPipeline.answering(in -> {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return step();
        }));
        InferenceStreams streams = new InferenceStreams(service, ReadyCluster.props("coordinator-0"));
        streams.start(request(60), null, task -> new NativeStreamFormat(false)).get(10, TimeUnit.SECONDS); // ~1.2 s of steps

        streams.destroy();

        TaskRecord task = onlyTask();
        assertThat(task.state()).isEqualTo(TaskRecord.State.EXECUTING);
        assertThat(task.pauseReason()).isEqualTo("the coordinator is shutting down");
        assertThat(task.tokenIds()).as("its progress, for the replica that resumes it").isNotEmpty();
        assertThat(stepsRun.get()).isLessThan(60);
    }

    /**
     * Issue 47, item 5: the seed of a request is fixed when it is first accepted, and recorded before its client holds
     * anything to resume with. A stream's first event (and so its first event id) goes out only once the task's start
     * (its request, with the seed drawn for it) is in the replicated state; before, the first tokens went out within
     * milliseconds and the start a flush interval later, and a client resuming a task whose start never reached the
     * log had the request run again under another seed (the head of one generation, the tail of another).
     */
    @Test
    void aStreamsFirstEventGoesOutOnlyOnceItsStartAndSeedAreRecorded() throws Exception {
        InferenceService service = cluster.service(ScriptedPipeline.answering(in -> step()));
        InferenceStreams streams = new InferenceStreams(service, ReadyCluster.props("coordinator-0"));
        for (long seed = 1; seed <= 5; seed++) {
            java.util.concurrent.atomic.AtomicReference<String> taskId = new java.util.concurrent.atomic.AtomicReference<>();
            GenerationRequest sampled = new GenerationRequest(null, List.of(1L, 17L), 8, 1.0, null, seed, null, true);
            streams.start(sampled, null, task -> {
                taskId.set(task.taskId());
                return new NativeStreamFormat(false);
            }).get(10, TimeUnit.SECONDS); // the first token event is out

            TaskRecord recorded = cluster.control().state().tasks().get(taskId.get()); // as it is, not flushed
            assertThat(recorded).as("the task's start is recorded before its first event").isNotNull();
            assertThat(recorded.request().seed()).isEqualTo(seed);
            awaitTasksEnded((int) seed); // the scripted stage answers one sequence a step
        }
    }

    /**
     * Issue 47, fault schedule 3 (two coordinator kills 10 s apart): task starts whose streams had delivered events
     * were unknown at every replica. A replica left without a quorum could not commit a stream's start, and after
     * waiting 10 s it streamed anyway, handing out event ids of a task no replica recorded (its start queued at a
     * replica that could die with it). Such a stream now fails before its first event, 503 (retry), and the task is
     * recorded as it ended once the log commits again.
     */
    @Test
    void aStreamWhoseStartTheLogCannotCommitFailsBeforeItsFirstEvent() {
        cluster.startWait(Duration.ofSeconds(1)); // the production 10 s: the same refusal, later
        InferenceService service = cluster.service(ScriptedPipeline.answering(in -> step()));
        InferenceStreams streams = new InferenceStreams(service, ReadyCluster.props("coordinator-0"));
        java.util.concurrent.atomic.AtomicReference<String> taskId = new java.util.concurrent.atomic.AtomicReference<>();
        cluster.control().quorum(false);

        assertThat(streams.start(request(6), null, task -> {
            taskId.set(task.taskId());
            return new NativeStreamFormat(false);
        })).as("the answer: the emitter (a 200 stream) or the refusal before it")
                .failsWithin(30, TimeUnit.SECONDS).withThrowableOfType(ExecutionException.class)
                .havingCause().isInstanceOf(ControlLogUnavailableException.class)
                .withMessageContaining("not committed");

        cluster.control().quorum(true);
        awaitTasksEnded(1);
        assertThat(onlyTask().taskId()).isEqualTo(taskId.get());
    }

    private StepResult step() {
        float[] logits = new float[CONFIG.vocabSize()];
        logits[100 + stepsRun.getAndIncrement() % 50] = 5f;
        return ScriptedPipeline.answer(logits, 1, CONFIG.vocabSize());
    }

    private static GenerationRequest request(int maxTokens) {
        return new GenerationRequest(null, List.of(1L, 17L), maxTokens, 0.0, null, null, null, true);
    }

    private TaskRecord onlyTask() {
        assertThat(cluster.recorded().tasks()).hasSize(1);
        return cluster.recorded().tasks().values().iterator().next();
    }

    private void awaitTasksEnded(int count) {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < deadline) {
            if (cluster.recorded().tasks().size() == count
                    && cluster.recorded().tasks().values().stream().allMatch(t -> t.state().terminal())) {
                return;
            }
            Thread.onSpinWait();
        }
        assertThat(cluster.recorded().tasks().values()).as("tasks ended").allMatch(t -> t.state().terminal());
    }
}
