package io.butterfly.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.common.model.generate.ModelGenerator;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * A worker SIGKILLed while four streamed generations (greedy and seeded sampling) run through it: the generations
 * pause instead of failing, and once the worker is back (restarted as the same node, it reloads its stage) they
 * replay their tokens into new KV caches and finish with the tokens the same requests give without a failure. Each
 * stream gives every token once, in order, and the system is READY afterwards.
 */
class ResumeIT {

    private static final int TOKENS = 200;

    @TempDir
    Path work;

    @Test
    void fourStreamsThatLoseAWorkerFinishWithTheTokensOfARunWithoutTheFailure() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(FailureDetectionIT.LLAMA, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try (LocalCluster cluster = new LocalCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 3; i++) {
                cluster.startWorker(i);
            }
            // A loaded machine may take a minute to start a worker again: the paused generations wait that long.
            cluster.startCoordinator("tiny-llama", 3, "--butterfly.coordinator.engine.recovery-timeout=5m");
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(8));
            Random random = new Random(17);
            List<String> bodies = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                String prompt = random.longs(8 + random.nextInt(32), 3, 512).mapToObj(Long::toString)
                        .collect(Collectors.joining(", ", "[", "]"));
                bodies.add("{\"token_ids\": " + prompt + ", \"max_tokens\": " + TOKENS + ", \"ignore_eos\": true, "
                        + (i % 2 == 0 ? "\"temperature\": 0" : "\"temperature\": 0.8, \"seed\": " + random.nextInt()) + "}");
            }
            List<Future<JsonNode>> references = new ArrayList<>();
            for (String body : bodies) {
                references.add(clients.submit(() -> cluster.post("/api/v1/inference", body).json()));
            }
            List<List<Long>> expected = new ArrayList<>();
            for (Future<JsonNode> r : references) {
                expected.add(longs(r.get(5, TimeUnit.MINUTES).path("token_ids")));
            }

            CountDownLatch underWay = new CountDownLatch(bodies.size());
            List<Future<Stream>> streams = new ArrayList<>();
            for (String body : bodies) {
                streams.add(clients.submit(() -> {
                    Stream s = new Stream(underWay);
                    new ResumableStream(List.of(cluster.coordinatorUrl() + "/api/v1/inference/stream"),
                            Duration.ofMinutes(5), Duration.ofMinutes(5), notice -> { }).post(body, s::onEvent);
                    return s;
                }));
            }
            assertThat(underWay.await(2, TimeUnit.MINUTES)).as("every stream under way").isTrue();
            cluster.kill("worker-1");
            cluster.restart("worker-1");

            for (int i = 0; i < streams.size(); i++) {
                Stream s = streams.get(i).get(5, TimeUnit.MINUTES);
                assertThat(s.indices).as("stream %d: each token once, in order", i)
                        .containsExactlyElementsOf(IntStream.range(0, TOKENS).boxed().toList());
                assertThat(s.tokens).as("stream %d: the tokens of a run without the failure", i).isEqualTo(expected.get(i));
                assertThat(s.done).as("stream %d: its answer", i).isEqualTo(expected.get(i));
                assertThat(s.longestGapMs()).as("stream %d paused while the worker was away", i).isGreaterThan(1_000);
            }
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString())
                    && s.path("paused_tasks").isEmpty(), Duration.ofMinutes(1));
        } finally {
            clients.shutdownNow();
        }
    }

    /** One stream's token events (their indices, tokens and arrival) and its answer's tokens. */
    private static final class Stream {
        private final CountDownLatch underWay;
        final List<Integer> indices = new ArrayList<>();
        final List<Long> tokens = new ArrayList<>();
        final List<Long> arrivals = new ArrayList<>();
        List<Long> done;

        Stream(CountDownLatch underWay) {
            this.underWay = underWay;
        }

        void onEvent(String name, String data) {
            JsonNode event = LocalCluster.JSON.readTree(data);
            if (name.equals("token")) {
                indices.add(event.path("index").asInt());
                tokens.add(event.path("token_id").asLong());
                arrivals.add(System.nanoTime());
                if (tokens.size() == 5) {
                    underWay.countDown();
                }
            } else if (name.equals("done")) {
                done = longs(event.path("token_ids"));
            } else {
                throw new AssertionError("unexpected " + name + " event: " + data);
            }
        }

        long longestGapMs() {
            long longest = 0;
            for (int i = 1; i < arrivals.size(); i++) {
                longest = Math.max(longest, arrivals.get(i) - arrivals.get(i - 1));
            }
            return longest / 1_000_000;
        }
    }

    static List<Long> longs(JsonNode array) {
        List<Long> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asLong()));
        return out;
    }
}
