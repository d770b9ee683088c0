package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.common.api.WorkerStatus;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.nio.file.Files;
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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;
import tools.jackson.databind.JsonNode;

/**
 * Two pipelines over five workers (two stages each and a spare; docs/scale-out.md), in this JVM. Four streamed
 * generations run, spread by the router over both pipelines; a worker of one pipeline is killed (as by SIGKILL). Only
 * that pipeline is re-planned: the spare takes the lost stage, the other pipeline keeps its stages and its workers
 * hold on without loading. The spare is paused (its calls wait, as a stopped process's) from before the kill until
 * the test releases it, so the first pipeline stays down for as long as the test watches, on a quiet machine as on a
 * loaded one: no window of wall-clock time is assumed. While every look at system/state shows the first pipeline not
 * serving (and the second serving, the system DEGRADED, in the re-plan's epoch), a request sent then (it can go only
 * to the second pipeline) runs from its first token to its last: the untouched pipeline serves through the other's
 * failure and the epoch change with no pause. Then the spare loads, and every stream, on either pipeline, finishes
 * with the tokens of a run without the failure, each once.
 */
class TwoPipelinesIT {

    private static final int TOKENS = 120;
    /** Tokens of each probe sent while the first pipeline is down. */
    private static final int PROBE_TOKENS = 16;

    @TempDir
    Path work;

    @Test
    void killingAWorkerOfOnePipelineLeavesTheOtherServingAndTheFirstsRequestsResumeTokenIdentically() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(6); // four streams and two loops of probes
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery("--butterfly.discovery.member-ttl=10m"); // the paused spare stays listed
            cluster.startRegistry(model);
            for (int i = 0; i < 5; i++) {
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("tiny-llama", 5, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=10m", // the paused spare is not judged
                    "--butterfly.coordinator.liveness.unheard-grace=10m",
                    "--butterfly.coordinator.planning.pipelines=2", "--butterfly.coordinator.planning.spares=1");
            JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("pipelines").size() == 2,
                    Duration.ofMinutes(8));
            List<String> first = strings(ready.path("pipelines").get(0).path("stages"));
            List<String> second = strings(ready.path("pipelines").get(1).path("stages"));
            assertThat(ready.path("spares")).hasSize(1);
            assertThat(first).doesNotContainAnyElementsOf(second);
            assertThat(ready.path("pipelines").get(0).path("serving").asBoolean()).isTrue();
            assertThat(ready.path("pipelines").get(1).path("serving").asBoolean()).isTrue();

            Random random = new Random(52);
            List<String> bodies = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                String prompt = random.longs(8 + random.nextInt(24), 3, 512).mapToObj(Long::toString)
                        .collect(Collectors.joining(", ", "[", "]"));
                bodies.add("{\"token_ids\": " + prompt + ", \"max_tokens\": " + TOKENS + ", \"ignore_eos\": true, "
                        + (i % 2 == 0 ? "\"temperature\": 0" : "\"temperature\": 0.8, \"seed\": " + random.nextInt()) + "}");
            }
            List<List<Long>> expected = new ArrayList<>();
            for (String body : bodies) {
                ClusterApi.Reply r = cluster.post("/api/v1/inference", body);
                assertThat(r.status()).as(r.body()).isEqualTo(200);
                expected.add(ResumeIT.longs(r.json().path("token_ids")));
            }

            String probe = "{\"token_ids\": [7, 301, 12, 88, 5], \"max_tokens\": " + PROBE_TOKENS
                    + ", \"ignore_eos\": true, \"temperature\": 0}";
            ClusterApi.Reply probeRun = cluster.post("/api/v1/inference", probe);
            assertThat(probeRun.status()).as(probeRun.body()).isEqualTo(200);
            List<Long> probeExpected = ResumeIT.longs(probeRun.json().path("token_ids"));

            CountDownLatch underWay = new CountDownLatch(bodies.size());
            List<Future<List<Long>>> streams = new ArrayList<>();
            List<List<Integer>> indices = new ArrayList<>();
            for (String body : bodies) {
                List<Integer> seen = new CopyOnWriteArrayList<>();
                indices.add(seen);
                streams.add(clients.submit(() -> stream(cluster, body, seen, underWay)));
            }
            assertThat(underWay.await(2, TimeUnit.MINUTES)).as("every stream under way").isTrue();
            // The spare's calls wait (a stopped process): the first pipeline stays down, its lost stage planned onto
            // the spare but not loaded, for as long as this test needs to watch the other serve.
            String spare = ready.path("spares").get(0).asString();
            cluster.pause(spare);
            String victim = first.get(first.size() - 1);
            cluster.kill(victim);

            // The window opens: the re-plan committed (epoch 2) and the first pipeline seen not serving while the
            // second, its stages kept, serves in the DEGRADED system.
            JsonNode opened = cluster.awaitState(st -> st.path("epoch").asLong() >= 2 && firstDownSecondServes(st),
                    Duration.ofMinutes(3));
            assertThat(strings(opened.path("pipelines").get(1).path("stages"))).isEqualTo(second);
            List<Integer> atOpen = indices.stream().map(List::size).toList();
            // New requests sent now can go only to the second pipeline: each must run start to finish, with the
            // tokens of a run without the failure, before the window is seen to close. Two loops of back-to-back
            // probes, so that one routed before the engine heard of the failure cannot hold the check up.
            AtomicBoolean released = new AtomicBoolean();
            CountDownLatch probeServed = new CountDownLatch(1);
            List<Future<Integer>> probes = new ArrayList<>();
            for (int p = 0; p < 2; p++) {
                probes.add(clients.submit(() -> {
                    int runs = 0;
                    while (!released.get()) {
                        List<Integer> seen = new ArrayList<>();
                        List<Long> tokens = stream(cluster, probe, seen, new CountDownLatch(0));
                        assertThat(tokens).as("probe: the tokens of a run without the failure").isEqualTo(probeExpected);
                        assertThat(seen).as("probe: each token once, in order")
                                .containsExactlyElementsOf(IntStream.range(0, PROBE_TOKENS).boxed().toList());
                        probeServed.countDown();
                        runs++;
                    }
                    return runs;
                }));
            }
            // Every look at the state until a probe was served shows the first pipeline down and the second serving.
            int looks = 0;
            long giveUp = System.nanoTime() + TimeUnit.MINUTES.toNanos(4);
            while (!probeServed.await(200, TimeUnit.MILLISECONDS)) {
                JsonNode st = cluster.get("/api/v1/system/state").json();
                assertThat(firstDownSecondServes(st)).as("while the probes run, look %d: %s", looks, st).isTrue();
                looks++;
                for (Future<Integer> p : probes) {
                    if (p.isDone()) {
                        p.get(); // a probe's failure, thrown here
                    }
                }
                assertThat(System.nanoTime()).as("a probe served within 4 minutes of the window's opening")
                        .isLessThan(giveUp);
            }
            JsonNode closing = cluster.get("/api/v1/system/state").json();
            assertThat(firstDownSecondServes(closing)).as("a probe served while the first pipeline was down: "
                    + closing).isTrue();
            List<Integer> atClose = indices.stream().map(List::size).toList();
            int advanced = 0;
            for (int i = 0; i < bodies.size(); i++) {
                advanced += atClose.get(i) > atOpen.get(i) ? 1 : 0;
            }
            System.out.printf("first pipeline down: %d looks while the probes ran; streams' tokens at the window's"
                    + " opening %s and close %s (%d streams advanced, all on the second pipeline; %d tasks paused)%n",
                    looks, atOpen, atClose, advanced, closing.path("paused_tasks").size());
            released.set(true);
            cluster.resume(spare); // the first pipeline loads its lost stage and resumes its requests

            for (int i = 0; i < streams.size(); i++) {
                List<Long> tokens = streams.get(i).get(5, TimeUnit.MINUTES);
                assertThat(indices.get(i)).as("stream %d: each token once, in order", i)
                        .containsExactlyElementsOf(IntStream.range(0, TOKENS).boxed().toList());
                assertThat(tokens).as("stream %d: the tokens of a run without the failure", i)
                        .isEqualTo(expected.get(i));
            }
            JsonNode s = cluster.awaitState(st -> ready(st) && st.path("epoch").asLong() == 2
                    && st.path("paused_tasks").isEmpty(), Duration.ofMinutes(2));
            assertThat(strings(s.path("pipelines").get(1).path("stages"))).isEqualTo(second);
            assertThat(strings(s.path("pipelines").get(0).path("stages"))).doesNotContain(victim)
                    .contains(ready.path("spares").get(0).asString());
            assertThat(plan(s, 2).path("reason").asString()).startsWith(victim + " FAILED: pipeline 0: spare");
            for (String kept : second) {
                WorkerStatus w = cluster.getFrom(kept, "/api/v1/worker/state").as(WorkerStatus.class);
                assertThat(w.epoch()).as(kept).isEqualTo(2);
                assertThat(w.partition().loadedInEpoch()).as(kept + " held on").isEqualTo(1);
            }
            for (Future<Integer> p : probes) {
                assertThat(p.get(5, TimeUnit.MINUTES)).as("probe runs").isPositive();
            }
            for (int i = 0; i < bodies.size(); i++) { // and the same requests again, on either pipeline
                ClusterApi.Reply r = cluster.post("/api/v1/inference", bodies.get(i));
                assertThat(ResumeIT.longs(r.json().path("token_ids"))).as("request %d after", i).isEqualTo(expected.get(i));
            }
        } finally {
            clients.shutdownNow();
        }
    }

    /**
     * The planner's count (pipelines = 0): two workers that each hold the model serve as two pipelines; a third joins
     * while a stream runs on them and becomes a third pipeline in a new epoch, the two serving pipelines keeping their
     * workers and stages (they hold on, caches kept) and the stream finishing with the tokens of an undisturbed run.
     */
    @Test
    void aJoiningWorkerAddsAPipelineWhileTheOthersKeepServing() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(1);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 2; i++) {
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("tiny-llama", 2, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.planning.pipelines=0");
            JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("pipelines").size() == 2,
                    Duration.ofMinutes(8));
            List<List<String>> serving = List.of(strings(ready.path("pipelines").get(0).path("stages")),
                    strings(ready.path("pipelines").get(1).path("stages")));
            long epoch = ready.path("epoch").asLong();

            String body = "{\"token_ids\": [5, 17, 301, 42, 9, 77], \"max_tokens\": " + TOKENS
                    + ", \"ignore_eos\": true, \"temperature\": 0}";
            ClusterApi.Reply undisturbed = cluster.post("/api/v1/inference", body);
            assertThat(undisturbed.status()).as(undisturbed.body()).isEqualTo(200);
            List<Long> expected = ResumeIT.longs(undisturbed.json().path("token_ids"));
            // Streams one after the other until the new pipeline serves: those under way at the epoch change too.
            java.util.concurrent.atomic.AtomicBoolean grownSeen = new java.util.concurrent.atomic.AtomicBoolean();
            CountDownLatch underWay = new CountDownLatch(1);
            Future<Integer> streams = clients.submit(() -> {
                int runs = 0;
                boolean last = false;
                while (!last) {
                    last = grownSeen.get();
                    List<Integer> seen = new ArrayList<>();
                    List<Long> tokens = stream(cluster, body, seen, underWay);
                    assertThat(tokens).as("stream %d: the tokens of a run without the join", runs).isEqualTo(expected);
                    assertThat(seen).as("stream %d: each token once, in order", runs)
                            .containsExactlyElementsOf(IntStream.range(0, TOKENS).boxed().toList());
                    runs++;
                }
                return runs;
            });
            assertThat(underWay.await(2, TimeUnit.MINUTES)).as("a stream under way").isTrue();

            cluster.startWorker(2, cluster.sharedStoreOption());
            JsonNode grown = cluster.awaitState(s -> ready(s) && s.path("pipelines").size() == 3,
                    Duration.ofMinutes(5));
            assertThat(grown.path("epoch").asLong()).isEqualTo(epoch + 1);
            assertThat(strings(grown.path("pipelines").get(0).path("stages"))).isEqualTo(serving.get(0));
            assertThat(strings(grown.path("pipelines").get(1).path("stages"))).isEqualTo(serving.get(1));
            assertThat(strings(grown.path("pipelines").get(2).path("stages"))).containsExactly("worker-2");
            assertThat(grown.path("pipelines").get(2).path("serving").asBoolean()).isTrue();
            assertThat(plan(grown, epoch + 1).path("reason").asString()).isEqualTo("pipeline 2 added over worker-2"
                    + " (0 spares left)");
            for (List<String> kept : serving) {
                WorkerStatus w = cluster.getFrom(kept.get(0), "/api/v1/worker/state").as(WorkerStatus.class);
                assertThat(w.epoch()).as(kept.get(0)).isEqualTo(epoch + 1);
                assertThat(w.partition().loadedInEpoch()).as(kept.get(0) + " held on").isEqualTo(epoch);
            }

            grownSeen.set(true);
            assertThat(streams.get(5, TimeUnit.MINUTES)).as("streams run across the join").isGreaterThanOrEqualTo(2);
            if (Files.isExecutable(ObservabilityIT.CHROMIUM) && Files.isExecutable(ObservabilityIT.CHROMEDRIVER)) {
                assertThat(dashboardPipelines(cluster, 3)).containsExactly(
                        "pipeline 0 serving: " + String.join(" ", serving.get(0)),
                        "pipeline 1 serving: " + String.join(" ", serving.get(1)),
                        "pipeline 2 serving: worker-2");
            } else {
                System.out.println("the dashboard's pipelines not checked: Debian's chromium and chromium-driver are"
                        + " not installed");
            }
        } finally {
            clients.shutdownNow();
        }
    }

    /** A streamed generation, resumed across the failure; its token indices into {@code seen}, its answer's tokens out. */
    private static List<Long> stream(InProcessCluster cluster, String body, List<Integer> seen, CountDownLatch underWay)
            throws Exception {
        List<Long> done = new ArrayList<>();
        new ResumableStream(List.of(cluster.coordinatorUrl() + "/api/v1/inference/stream"), Duration.ofMinutes(5),
                Duration.ofMinutes(5), notice -> { }).post(body, (name, data) -> {
                    JsonNode event = ClusterApi.JSON.readTree(data);
                    if (name.equals("token")) {
                        seen.add(event.path("index").asInt());
                        if (seen.size() == 5) {
                            underWay.countDown();
                        }
                    } else if (name.equals("done")) {
                        done.addAll(ResumeIT.longs(event.path("token_ids")));
                    }
                });
        return done;
    }

    /**
     * The dashboard at {@code /} in a headless Chromium, once it draws {@code rows} pipelines: each row's label and
     * whether it serves, then its stages' workers in order ("pipeline 0 serving: worker-0").
     */
    private List<String> dashboardPipelines(InProcessCluster cluster, int rows) throws Exception {
        ChromeOptions options = new ChromeOptions().setBinary(ObservabilityIT.CHROMIUM.toFile()).addArguments(
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--window-size=1400,1200", "--user-data-dir=" + Files.createDirectories(work.resolve("chromium")));
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(ObservabilityIT.CHROMEDRIVER.toFile()).usingAnyFreePort().build();
        WebDriver browser = new ChromeDriver(service, options);
        try {
            browser.get(cluster.coordinatorUrl() + "/");
            // Read in one script: the page redraws every second, so elements found one by one may be replaced between
            // two reads (a slow browser on a loaded machine never finished such a walk).
            return new WebDriverWait(browser, Duration.ofSeconds(120)).until(b -> {
                Object shown = ((JavascriptExecutor) b).executeScript("return [...document.querySelectorAll("
                        + "'#layer-map .pipeline-row')].map(r => r.querySelector('.pipeline-label').innerText"
                        + ".replace(/\\s+/g, ' ').trim() + ': ' + [...r.querySelectorAll('.stage')]"
                        + ".map(s => s.dataset.stage).join(' '))");
                List<String> out = new ArrayList<>();
                ((List<?>) shown).forEach(row -> out.add(String.valueOf(row)));
                return out.size() == rows ? out : null;
            });
        } finally {
            browser.quit();
        }
    }

    /** The system DEGRADED, two pipelines, the first not serving and the second serving. */
    private static boolean firstDownSecondServes(JsonNode st) {
        JsonNode p = st.path("pipelines");
        return "DEGRADED".equals(st.path("system_state").asString()) && p.size() == 2
                && !p.get(0).path("serving").asBoolean() && p.get(1).path("serving").asBoolean();
    }

    private static boolean ready(JsonNode s) {
        return "READY".equals(s.path("system_state").asString());
    }

    private static JsonNode plan(JsonNode state, long epoch) {
        for (JsonNode p : state.path("plans")) {
            if (p.path("epoch").asLong() == epoch) {
                return p;
            }
        }
        throw new AssertionError("no plan of epoch " + epoch + " in " + state);
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asString()));
        return out;
    }
}
