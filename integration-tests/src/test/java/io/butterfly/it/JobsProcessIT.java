package io.butterfly.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.it.inprocess.JobsIT;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Batch jobs with real processes (docs/jobs.md): a coordinator and three workers as separate JVMs, the JOBS port in
 * mutual TLS with the cluster CA (the default), the C example (examples/jobs-client, compiled here with OpenSSL)
 * authenticated by a client certificate the cluster CA issued (made with the openssl command line as docs/jobs.md
 * shows) pulls 20 batches of a job and answers each; the results endpoint returns each once. A client without a
 * certificate gets nothing. A second client process is killed while it waits for its batch (its lease taken), and
 * once the lease has ended that batch goes to the next client.
 */
class JobsProcessIT {

    private static final long SEED = 4242;

    @TempDir
    Path work;

    @Test
    void theCExamplePullsTwentyBatchesAndAKilledClientsBatchGoesToAnother() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        int jobsPort = io.butterfly.testsupport.Ports.free();
        JobsIT.compileCClient(work);
        Path example = work.resolve("jobs_example_tls");
        assertThat(example).as("the TLS client: OpenSSL's headers (libssl-dev) are needed").exists();
        try (LocalCluster cluster = new LocalCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 3; i++) {
                cluster.startWorker(i);
            }
            cluster.startCoordinator("tiny-llama", 3, "--butterfly.coordinator.jobs.enabled=true",
                    "--butterfly.coordinator.jobs.host=127.0.0.1",
                    "--butterfly.coordinator.jobs.port=" + jobsPort, "--butterfly.coordinator.jobs.lease=15s");
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(8));

            String dataset = IntStream.range(0, 60).mapToObj(i -> "{\"prompt\": \"prompt number " + i + "\"}")
                    .collect(Collectors.joining("\n"));
            var imported = cluster.send(HttpRequest.newBuilder(URI.create(cluster.coordinatorUrl()
                    + "/api/v1/jobs/datasets")).header("Content-Type", "application/x-ndjson")
                    .POST(HttpRequest.BodyPublishers.ofString(dataset)).build());
            assertThat(imported.status()).as(imported.body()).isEqualTo(201);
            var defined = cluster.post("/api/v1/jobs", """
                    {"id": "proc", "dataset_sha256": "%s", "batch_size": 3, "seed": %d, "max_tokens": 6}"""
                    .formatted(imported.json().path("sha256").asString(), SEED));
            assertThat(defined.status()).as(defined.body()).isEqualTo(201);

            clientCertificate(work.resolve("tls"));
            // the port is TLS: the plaintext client, and a TLS client whose certificate the cluster CA did not issue, get
            // no batch
            Process plain = new ProcessBuilder(work.resolve("jobs_example").toString(), "127.0.0.1",
                    String.valueOf(jobsPort), String.valueOf(SEED), "0", "any").redirectErrorStream(true).start();
            String refused = new String(plain.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(plain.waitFor()).as(refused).isEqualTo(1);
            assertThat(refused).doesNotContain("batch seed=");
            ProcessBuilder stranger = client(example, jobsPort, String.valueOf(SEED), "0", "any");
            stranger.environment().put("JOBS_TLS_CERT", work.resolve("stranger.crt").toString());
            stranger.environment().put("JOBS_TLS_KEY", work.resolve("stranger.key").toString());
            Process strangerProcess = stranger.start();
            String strangerOut = new String(strangerProcess.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(strangerProcess.waitFor()).as(strangerOut).isEqualTo(1);
            assertThat(strangerOut).doesNotContain("batch seed=");

            // 20 batches of step 0, the coordinator choosing each, each answered
            String pulled = run(example, jobsPort, 0, String.valueOf(SEED), "0", "any", "ok", "20");
            assertThat(pulled.lines().filter(l -> l.equals("result stored")).count()).as(pulled).isEqualTo(20);
            List<JsonNode> lines = results(cluster);
            assertThat(lines).hasSize(20);
            assertThat(lines).extracting(l -> l.path("position").asLong())
                    .containsExactlyElementsOf(IntStream.range(0, 20).mapToObj(i -> 3L * i).toList());

            // a client killed while its batch (step 1) is leased to it; another gets the other batches meanwhile,
            // then, once the lease has ended, the killed one's
            Process killed = client(example, jobsPort, String.valueOf(SEED), "1", "any").start();
            awaitLeased(cluster);
            long leasedAt = System.nanoTime();
            killed.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            String others = run(example, jobsPort, 0, String.valueOf(SEED), "1", "any", "other", "19");
            if (!others.contains("step=1 position=0 ")) {
                Thread.sleep(Math.max(0, Duration.ofSeconds(16).toMillis()
                        - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - leasedAt)));
                String late = run(example, jobsPort, 0, String.valueOf(SEED), "1", "any", "late");
                assertThat(late).contains("batch seed=" + SEED + " step=1 position=0 samples=3", "result stored");
            } else { // its lease ended while they ran (a loaded machine): they took its batch, so one other is left
                String late = run(example, jobsPort, 0, String.valueOf(SEED), "1", "any", "late");
                assertThat(late).contains("batch seed=" + SEED + " step=1 position=", "result stored");
            }
            assertThat(run(example, jobsPort, 2, String.valueOf(SEED), "1", "any")).contains("ERROR 13");
            assertThat(results(cluster)).hasSize(40);
            cluster.checkNoServiceDied();
        }
    }

    private static void awaitLeased(LocalCluster cluster) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (System.nanoTime() < deadline) {
            if (cluster.get("/api/v1/jobs/proc").json().path("progress").path("leased").asLong() > 0) {
                return;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("the client's batch was never leased");
    }

    /** The TLS example against 127.0.0.1 with the client certificate of {@link #clientCertificate}. */
    private ProcessBuilder client(Path example, int port, String... args) {
        List<String> command = new ArrayList<>(List.of(example.toString(), "127.0.0.1", String.valueOf(port)));
        command.addAll(List.of(args));
        ProcessBuilder b = new ProcessBuilder(command).redirectErrorStream(true);
        b.environment().put("JOBS_TLS_CA", work.resolve("tls").resolve("ca.crt").toString());
        b.environment().put("JOBS_TLS_CERT", work.resolve("client.crt").toString());
        b.environment().put("JOBS_TLS_KEY", work.resolve("client.key").toString());
        return b;
    }

    /**
     * A JOBS client's certificate from the cluster CA in {@code ca}, made as docs/jobs.md tells an operator: a key and
     * a request by {@code openssl req}, signed by {@code openssl x509} with the CA's key, for client authentication;
     * and a stranger's, self-signed.
     */
    private void clientCertificate(Path ca) throws Exception {
        Path extensions = work.resolve("client.ext");
        java.nio.file.Files.writeString(extensions, "extendedKeyUsage=clientAuth\n");
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
                "/CN=jobs-client-1", "-keyout", work.resolve("client.key").toString(), "-out",
                work.resolve("client.csr").toString());
        openssl("x509", "-req", "-in", work.resolve("client.csr").toString(), "-CA", ca.resolve("ca.crt").toString(),
                "-CAkey", ca.resolve("ca.key").toString(), "-set_serial", "4848", "-days", "30", "-extfile",
                extensions.toString(), "-out", work.resolve("client.crt").toString());
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
                "/CN=stranger", "-days", "30", "-addext", "extendedKeyUsage=clientAuth", "-keyout",
                work.resolve("stranger.key").toString(), "-out", work.resolve("stranger.crt").toString());
    }

    private static void openssl(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("openssl"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(String.join(" ", command) + "\n" + out).isZero();
    }

    private static List<JsonNode> results(LocalCluster cluster) throws Exception {
        var r = cluster.get("/api/v1/jobs/proc/results");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        List<JsonNode> out = new ArrayList<>();
        r.body().lines().forEach(l -> out.add(io.butterfly.harness.ClusterApi.JSON.readTree(l)));
        return out;
    }

    private String run(Path example, int port, int expectedExit, String... args) throws Exception {
        Process p = client(example, port, args).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(out).isEqualTo(expectedExit);
        return out;
    }
}
