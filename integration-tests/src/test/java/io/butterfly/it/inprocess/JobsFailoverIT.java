package io.butterfly.it.inprocess;

import static io.butterfly.it.inprocess.JobsIT.exchange;
import static io.butterfly.it.inprocess.JobsIT.request;
import static io.butterfly.it.inprocess.JobsIT.resultFrame;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.api.jobs.JobsServer;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Batch jobs across three coordinator replicas and a pipeline that loses a worker (docs/jobs.md): a batch named by
 * (seed, step, position) is the same bytes from any replica, and after a pipeline stage is killed while it is being
 * generated; a client that vanishes with a batch leased loses nothing, since the batch goes to the next request once
 * its lease ends, with the same bytes; RESULTs are committed through the control log once each, so the replicas that
 * survive the leader's death hold every acknowledged one and a repeat is acknowledged without being stored twice.
 */
class JobsFailoverIT {

    private static final long SEED = 77;
    private static final List<String> REPLICAS = List.of("coordinator", "coordinator-1", "coordinator-2");

    @TempDir
    Path work;

    @Test
    void batchesAreTheSameBytesAnywhereLeasesMoveOnAndResultsSurviveFailover() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.everyServiceWith("--butterfly.coordinator.jobs.enabled=true", "--butterfly.coordinator.jobs.port=0",
                    "--butterfly.coordinator.jobs.host=127.0.0.1", "--butterfly.coordinator.jobs.lease=20s",
                    "--butterfly.coordinator.jobs.dataset-dir=" + work.resolve("datasets"));
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 3; i++) {
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinatorGroup("tiny-llama", 2, 3, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            String leader = awaitLeaderServing(cluster);
            List<String> others = REPLICAS.stream().filter(r -> !r.equals(leader)).toList();

            ClusterApi.Reply imported = cluster.send(HttpRequest.newBuilder(URI.create(cluster.urlOf(leader)
                    + "/api/v1/jobs/datasets")).header("Content-Type", "application/x-ndjson").POST(
                    HttpRequest.BodyPublishers.ofString("""
                            {"prompt": "The butterfly"}
                            {"prompt": "Once upon a time"}
                            {"prompt": "A model cluster"}
                            {"prompt": "Seeds and steps"}
                            {"messages": [{"role": "user", "content": "Name a colour."}]}
                            {"prompt": "Last one"}
                            """)).build());
            assertThat(imported.status()).as(imported.body()).isEqualTo(201);
            ClusterApi.Reply defined = cluster.postTo(leader, "/api/v1/jobs", """
                    {"id": "fo", "dataset_sha256": "%s", "batch_size": 3, "seed": %d, "max_tokens": 48,
                     "temperature": 0.9}""".formatted(imported.json().path("sha256").asString(), SEED));
            assertThat(defined.status()).as(defined.body()).isEqualTo(201);

            // 1. the same (seed, step, position) from two replicas: the same bytes
            byte[] reference = ask(cluster, others.get(0), request(SEED, 0, 0));
            assertThat(ask(cluster, others.get(1), request(SEED, 0, 0))).isEqualTo(reference);
            assertThat(ask(cluster, leader, request(SEED, 0, 0))).isEqualTo(reference);

            // 2. a pipeline stage killed while a batch is generated: the batch comes, the same bytes
            byte[] before = ask(cluster, others.get(0), request(SEED, 2, 3));
            JsonNode state = cluster.getFrom(leader, "/api/v1/system/state").json();
            String stage = state.path("pipeline").get(1).asString();
            CompletableFuture<byte[]> during = CompletableFuture.supplyAsync(() -> {
                try {
                    return ask(cluster, others.get(1), request(SEED, 2, 3));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            Thread.sleep(300); // the request is in: its samples are generated (48 tokens each) when the stage dies
            cluster.kill(stage);
            assertThat(during.get(5, TimeUnit.MINUTES)).as("generated again across the lost stage").isEqualTo(before);

            // 3. leases: a client takes any batch of step 1 and vanishes; another gets the other batch, then, once
            // the lease has ended, the vanished client's, with the bytes it had been sent
            byte[] vanished;
            try (Socket client = new Socket("127.0.0.1", port(cluster, others.get(0)))) {
                vanished = exchange(client, 2, request(SEED, 1, -1));
            } // closed without a RESULT
            long lost = position(vanished);
            byte[] second;
            byte[] reassigned;
            try (Socket client = new Socket("127.0.0.1", port(cluster, others.get(1)))) {
                second = exchange(client, 2, request(SEED, 1, -1));
                assertThat(position(second)).isNotEqualTo(lost);
                assertThat(JobsIT.errorCode(exchange(client, 3, request(SEED, 1, -1)))).as("nothing left until a lease"
                        + " ends: UNAVAILABLE").isEqualTo(9);
                assertThat(ack(exchange(client, 4, resultFrame(SEED, 1, position(second), bytes("second")))))
                        .isEqualTo(1);
                JsonNode progress = cluster.getFrom(leader, "/api/v1/jobs/fo").json().path("progress");
                assertThat(progress.path("leased").asLong()).isPositive();
                reassigned = awaitLeaseEnded(client, request(SEED, 1, -1));
            }
            assertThat(reassigned).as("the vanished client's batch, the same bytes").isEqualTo(vanished);
            try (Socket client = new Socket("127.0.0.1", port(cluster, others.get(0)))) {
                assertThat(ack(exchange(client, 4, resultFrame(SEED, 1, lost, bytes("reassigned"))))).isEqualTo(1);
            }
            try (Socket late = new Socket("127.0.0.1", port(cluster, leader))) {
                assertThat(ack(exchange(late, 4, resultFrame(SEED, 1, lost, bytes("late"))))).as("a repeat").isZero();
                assertThat(JobsIT.errorCode(exchange(late, 3, request(SEED, 1, -1)))).as("step 1 is done")
                        .isEqualTo(13);
            }

            // 4. the leader dies: the others hold every acknowledged result, and a repeat is still not stored twice
            cluster.kill(leader);
            for (String survivor : others) {
                try (Socket s = new Socket("127.0.0.1", port(cluster, survivor))) {
                    assertThat(ack(awaitAck(s, resultFrame(SEED, 1, lost, bytes("again"))))).isZero();
                }
            }
            List<String> first = resultLines(cluster, others.get(0));
            assertThat(resultLines(cluster, others.get(1))).isEqualTo(first);
            List<JsonNode> step1 = first.stream().map(l -> ClusterApi.JSON.readTree(l))
                    .filter(l -> l.path("step").asLong() == 1).toList();
            assertThat(step1).extracting(l -> l.path("position").asLong())
                    .containsExactlyInAnyOrder(lost, position(second));
            assertThat(step1).extracting(l -> new String(java.util.Base64.getDecoder().decode(l.path("result")
                    .asString()), StandardCharsets.UTF_8)).containsExactlyInAnyOrder("reassigned", "second");
        }
    }

    /**
     * The batch a REQUEST gets once the vanished client's lease has ended (UNAVAILABLE until then): asked again every
     * 200 ms, so the test waits what is left of the lease, not a whole lease after the batch was handed out.
     */
    private static byte[] awaitLeaseEnded(Socket client, byte[] request) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (true) {
            byte[] answer = exchange(client, -1, request);
            if (answer[5] == 2 || System.nanoTime() > deadline) {
                assertThat(answer[5]).as(new String(answer, StandardCharsets.UTF_8)).isEqualTo((byte) 2);
                return answer;
            }
            assertThat(JobsIT.errorCode(answer)).as("UNAVAILABLE while the lease lasts").isEqualTo(9);
            Thread.sleep(200);
        }
    }

    /** A RESULT sent until the control log has a leader again (UNAVAILABLE meanwhile): its acknowledgement. */
    private static byte[] awaitAck(Socket s, byte[] frame) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (true) {
            byte[] answer = exchange(s, -1, frame);
            if (answer[5] == 4 || System.nanoTime() > deadline) {
                assertThat(answer[5]).as(new String(answer, StandardCharsets.UTF_8)).isEqualTo((byte) 4);
                return answer;
            }
            Thread.sleep(500);
        }
    }

    private static byte[] ask(InProcessCluster cluster, String replica, byte[] frame) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port(cluster, replica))) {
            return exchange(s, 2, frame);
        }
    }

    private static int port(InProcessCluster cluster, String replica) {
        return cluster.bean(replica, JobsServer.class).port();
    }

    private static long position(byte[] response) {
        return ByteBuffer.wrap(response, 10 + 16, 8).getLong();
    }

    private static int ack(byte[] frame) {
        return frame[10 + 24];
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static List<String> resultLines(InProcessCluster cluster, String replica) throws Exception {
        ClusterApi.Reply r = cluster.getFrom(replica, "/api/v1/jobs/fo/results");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        return r.body().lines().toList();
    }

    /** The leader, once every replica answers and serves READY. */
    private static String awaitLeaderServing(InProcessCluster cluster) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofMinutes(8).toNanos();
        while (System.nanoTime() < deadline) {
            String leader = null;
            int ready = 0;
            for (String r : REPLICAS) {
                JsonNode s = state(cluster, r);
                if (s != null && "READY".equals(s.path("system_state").asString())) {
                    ready++;
                    leader = "LEADER".equals(s.path("raft").path("role").asString()) ? r : leader;
                }
            }
            if (ready == REPLICAS.size() && leader != null) {
                return leader;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("no replica leads a READY system:\n" + cluster.diagnostics());
    }

    private static JsonNode state(InProcessCluster cluster, String replica) {
        try {
            ClusterApi.Reply r = cluster.getFrom(replica, "/api/v1/system/state");
            return r.status() == 200 ? r.json() : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
