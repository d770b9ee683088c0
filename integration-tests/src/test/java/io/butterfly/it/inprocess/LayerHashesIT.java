package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.api.TaskTranscript;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Per-layer snapshot hashes (docs/verified-execution.md) on the services in one JVM: a request with
 * {@code layer_hashes} gets, in its transcript, every layer's output hash for each of its steps; one worker and a
 * split over two give the same hash for every (step, layer), and the same digest as the request without them; a
 * worker that flips a bit at its first layer (fault injection at a layer) is found by comparing its run with a healthy
 * one: the first layer that differs is that worker's first layer.
 */
class LayerHashesIT {

    private static final String GREEDY = """
            {"token_ids": [1, 17, 230, 5, 42, 9], "max_tokens": 6, "temperature": 0, "layer_hashes": true}""";
    private static final String PLAIN = """
            {"token_ids": [1, 17, 230, 5, 42, 9], "max_tokens": 6, "temperature": 0}""";
    private static final String FAULTY = "worker-1";

    @TempDir
    Path work;

    @Test
    void twoSplitsGiveEqualLayerHashesAndACorruptingWorkerIsLocatedToItsFirstLayer() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_6, 7, model);
        int layers = TinyModels.LLAMA_6.numLayers();

        TaskTranscript one;
        try (InProcessCluster cluster = new InProcessCluster(work.resolve("one"))) {
            cluster.startAll(model, 1);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
            one = transcript(cluster, run(cluster, GREEDY));
        }
        assertThat(one.steps()).isNotEmpty().allSatisfy(step -> assertThat(layersOf(step)).hasSize(layers));

        TaskTranscript two;
        String plainDigest;
        try (InProcessCluster cluster = new InProcessCluster(work.resolve("two"))) {
            cluster.startAll(model, 2);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
            two = transcript(cluster, run(cluster, GREEDY));
            plainDigest = transcript(cluster, run(cluster, PLAIN)).digest();
        }
        assertThat(two.steps()).allSatisfy(step -> assertThat(step.stages()).hasSize(2));
        assertThat(byStepAndLayer(two)).isEqualTo(byStepAndLayer(one));
        assertThat(two.firstDivergenceFrom(one)).isEmpty();
        // asking for them changes no bit: the same chain as without, and as on one worker
        assertThat(two.digest()).isEqualTo(plainDigest).isEqualTo(one.digest());

        TaskTranscript faulty;
        try (InProcessCluster cluster = new InProcessCluster(work.resolve("faulty"))) {
            cluster.startAll(model, 2, i -> i == 1 ? new String[]{
                    "--butterfly.worker.unsafe-fault-injection.enabled=true",
                    "--butterfly.worker.unsafe-fault-injection.flip-bit-fraction=1",
                    "--butterfly.worker.unsafe-fault-injection.flip-bit-layer=0"} : new String[0]);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
            faulty = transcript(cluster, run(cluster, GREEDY));
        }
        TaskTranscript.Divergence where = faulty.firstDivergenceFrom(two).orElseThrow();
        TaskTranscript.Step first = faulty.steps().get(0);
        int firstLayerOfFaulty = first.stages().stream().filter(st -> st.nodeId().equals(FAULTY))
                .flatMap(st -> st.layers().stream()).mapToInt(TaskTranscript.Layer::layer).min().orElseThrow();
        System.out.printf("LayerHashesIT: divergence at position %d, %s, layer %d (its first layer: %d)%n",
                where.position(), where.nodeId(), where.layer(), firstLayerOfFaulty);
        assertThat(where.nodeId()).isEqualTo(FAULTY);
        assertThat(where.layer()).isEqualTo(firstLayerOfFaulty);
        assertThat(where.position()).isEqualTo(first.position());
        // the other worker's layers of that step are the healthy run's
        Map<String, String> healthy = byStepAndLayer(two);
        first.stages().stream().filter(st -> !st.nodeId().equals(FAULTY)).flatMap(st -> st.layers().stream())
                .forEach(l -> assertThat(l.outputHash()).isEqualTo(healthy.get(first.position() + "/" + l.layer())));
    }

    private static List<TaskTranscript.Layer> layersOf(TaskTranscript.Step step) {
        return step.stages().stream().flatMap(st -> st.layers().stream()).toList();
    }

    /** Every layer's hash of every step, under "position/layer". */
    private static Map<String, String> byStepAndLayer(TaskTranscript t) {
        Map<String, String> out = new TreeMap<>();
        for (TaskTranscript.Step step : t.steps()) {
            for (TaskTranscript.Layer l : layersOf(step)) {
                out.put(step.position() + "/" + l.layer(), l.outputHash());
            }
        }
        return out;
    }

    private static JsonNode run(InProcessCluster cluster, String request) throws Exception {
        ClusterApi.Reply r = cluster.post("/api/v1/inference", request);
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        return r.json();
    }

    private static TaskTranscript transcript(InProcessCluster cluster, JsonNode answer) throws Exception {
        String id = answer.path("task_id").asString();
        cluster.awaitTaskEnded("coordinator", id);
        ClusterApi.Reply r = cluster.get("/api/v1/tasks/" + id + "/transcript");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        TaskTranscript t = r.as(TaskTranscript.class);
        List<Long> tokens = new ArrayList<>();
        answer.path("token_ids").forEach(n -> tokens.add(n.asLong()));
        assertThat(t.links().stream().map(TaskTranscript.Link::tokenId).toList()).isEqualTo(tokens);
        return t;
    }
}
