package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.api.jobs.JobsServer;
import io.butterfly.coordinator.jobs.SampleSeeds;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Batch jobs end to end (docs/jobs.md) on an in-process cluster: a dataset imported and a job defined over REST, then
 * a plain socket speaking the JOBS protocol (nothing of the coordinator's code on the client side) pulls a batch twice
 * and gets the same bytes, generated through the cluster; malformed frames are answered with ERROR frames and the
 * listener goes on serving; a RESULT is acknowledged once and readable over REST.
 */
public class JobsIT {

    @TempDir
    Path work;

    @Test
    void aBatchIsTheSameBytesEachTimeAndBadFramesAreRefused() throws Exception {
        Path model = work.resolve("jobs-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.everyServiceWith("--butterfly.coordinator.jobs.enabled=true", "--butterfly.coordinator.jobs.port=0",
                    "--butterfly.coordinator.jobs.host=127.0.0.1", "--butterfly.coordinator.jobs.max-frame-bytes=4KB");
            cluster.startAll(model, 2);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
            int port = cluster.bean("coordinator", JobsServer.class).port();

            ClusterApi.Reply imported = cluster.send(HttpRequest.newBuilder(URI.create(cluster.coordinatorUrl()
                    + "/api/v1/jobs/datasets")).header("Content-Type", "application/x-ndjson").POST(
                    HttpRequest.BodyPublishers.ofString("""
                            {"prompt": "The butterfly"}
                            {"prompt": "Once upon a time", "id": "b"}
                            {"prompt": "A model cluster"}
                            {"prompt": "Seeds and steps"}
                            {"prompt": "Last one"}
                            """)).build());
            assertThat(imported.status()).as(imported.body()).isEqualTo(201);
            String sha = imported.json().path("sha256").asString();
            assertThat(imported.json().path("samples").asInt()).isEqualTo(5);

            ClusterApi.Reply refused = cluster.post("/api/v1/jobs", """
                    {"id": "gen", "dataset_sha256": "%s", "batch_size": 0, "seed": 42}""".formatted(sha));
            assertThat(refused.status()).isEqualTo(400);
            assertThat(refused.contentType()).startsWith("application/problem+json");
            assertThat(refused.json().path("field").asString()).isEqualTo("batch_size");
            ClusterApi.Reply defined = cluster.post("/api/v1/jobs", """
                    {"id": "gen", "dataset_sha256": "%s", "batch_size": 3, "seed": 42, "max_tokens": 5,
                     "temperature": 0.9}""".formatted(sha));
            assertThat(defined.status()).as(defined.body()).isEqualTo(201);

            byte[] first;
            try (Socket s = new Socket("127.0.0.1", port)) {
                first = exchange(s, 2, request(42, 0, 0));
                assertThat(exchange(s, 2, request(42, 0, 0))).isEqualTo(first);
                byte[] tail = exchange(s, 2, request(42, 0, 3));
                assertThat(ByteBuffer.wrap(tail, 26, 8).getLong()).isEqualTo(3L);
                assertThat(samplePositionsAndSeeds(tail)).containsExactly(3L, SampleSeeds.of(42, 0, 3),
                        4L, SampleSeeds.of(42, 0, 4));
                // a frame the listener cannot place: answered, and the connection goes on
                assertThat(errorCode(exchange(s, 3, frame(9, new byte[5])))).isEqualTo(3); // UNKNOWN_OPCODE
                assertThat(errorCode(exchange(s, 3, frame(0, new byte[23])))).isEqualTo(5); // BAD_LENGTH
                assertThat(errorCode(exchange(s, 3, request(7, 0, 0)))).isEqualTo(7); // UNKNOWN_JOB
                assertThat(errorCode(exchange(s, 3, request(42, 0, 5)))).isEqualTo(8); // POSITION_OUT_OF_RANGE
                // the same batch again, from another connection below too: the same bytes
                assertThat(exchange(s, 2, request(42, 0, 0))).isEqualTo(first);
            }
            assertThat(samplePositionsAndSeeds(first)).containsExactly(0L, SampleSeeds.of(42, 0, 0),
                    1L, SampleSeeds.of(42, 0, 1), 2L, SampleSeeds.of(42, 0, 2));

            byte[] badMagic = request(42, 0, 0);
            badMagic[0] = 'X';
            assertRefusedThenClosed(port, badMagic, 1);
            byte[] version2 = request(42, 0, 0);
            version2[4] = 2;
            assertRefusedThenClosed(port, version2, 2);
            byte[] oversized = ByteBuffer.allocate(10).put("JOBS".getBytes(StandardCharsets.US_ASCII)).put((byte) 1)
                    .put((byte) 1).putInt(-1).array();
            assertRefusedThenClosed(port, oversized, 4);

            try (Socket s = new Socket("127.0.0.1", port)) {
                assertThat(exchange(s, 2, request(42, 0, 0))).isEqualTo(first);
                byte[] result = "score=0.5".getBytes(StandardCharsets.UTF_8);
                byte[] ack = exchange(s, 4, resultFrame(42, 0, 0, result));
                assertThat(ack[10 + 24]).isEqualTo((byte) 1);
                byte[] again = exchange(s, 4, resultFrame(42, 0, 0, "other".getBytes(StandardCharsets.UTF_8)));
                assertThat(again[10 + 24]).isEqualTo((byte) 0);
                // a result for a batch no replica handed out: refused (NOT_HANDED_OUT)
                assertThat(errorCode(exchange(s, 3, resultFrame(42, 7, 0, result)))).isEqualTo(12);
            }
            String printed = runCClient(port, "42", "0", "1", "c-client-result");
            assertThat(printed).contains("batch seed=42 step=0 position=1 samples=3", "sample 1 seed="
                    + Long.toUnsignedString(SampleSeeds.of(42, 0, 1)), "sample 3 seed=", "result stored");

            ClusterApi.Reply results = cluster.get("/api/v1/jobs/gen/results");
            assertThat(results.contentType()).startsWith("application/x-ndjson");
            java.util.List<JsonNode> lines = results.body().lines().map(l -> ClusterApi.JSON.readTree(l)).toList();
            assertThat(lines).hasSize(2);
            assertThat(Base64.getDecoder().decode(lines.get(0).path("result").asString()))
                    .isEqualTo("score=0.5".getBytes(StandardCharsets.UTF_8));
            assertThat(lines.get(0).path("samples").get(1).path("prompt").asString()).isEqualTo("Once upon a time");
            assertThat(lines.get(0).path("samples").get(1).path("seed").asString())
                    .isEqualTo(Long.toUnsignedString(SampleSeeds.of(42, 0, 1)));
            assertThat(lines.get(1).path("position").asLong()).isEqualTo(1);
            assertThat(Base64.getDecoder().decode(lines.get(1).path("result").asString()))
                    .isEqualTo("c-client-result".getBytes(StandardCharsets.UTF_8));
            JsonNode progress = cluster.get("/api/v1/jobs/gen").json().path("progress");
            assertThat(progress.path("results").asInt()).isEqualTo(2);
            assertThat(progress.path("done").asInt()).isEqualTo(4); // the batches at 0 and at 1: positions 0 to 3

            // the example asking for any batch of step 5: the coordinator hands out 0 then 3, then there is none left
            String any = runCClient(port, "42", "5", "any", "from-any", "2");
            assertThat(any).contains("batch seed=42 step=5 position=0 samples=3", "batch seed=42 step=5 position=3"
                    + " samples=2").containsOnlyOnce("result stored\nbatch").endsWith("result stored\n");
            assertThat(runCClient(port, 2, "42", "5", "any")).contains("ERROR 13");
            cluster.checkNoServiceDied();
        }
    }

    /**
     * examples/jobs-client's example program on the client library (jobs_client.h, jobs_client.c), compiled with the
     * machine's C compiler (and its OpenSSL variant too, when OpenSSL's headers are there) and run: what it printed.
     */
    private String runCClient(int port, String... args) throws Exception {
        return runCClient(port, 0, args);
    }

    String runCClient(int port, int expectedExit, String... args) throws Exception {
        Path binary = compileCClient(work);
        java.util.List<String> command = new java.util.ArrayList<>(java.util.List.of(binary.toString(), "127.0.0.1",
                String.valueOf(port)));
        command.addAll(java.util.List.of(args));
        Process client = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(client.waitFor()).as(out).isEqualTo(expectedExit);
        return out;
    }

    /** The example compiled into {@code dir} (once). */
    public static Path compileCClient(Path dir) throws Exception {
        Path sources = Path.of("..", "examples", "jobs-client").toAbsolutePath().normalize();
        Path binary = dir.resolve("jobs_example");
        if (java.nio.file.Files.exists(binary)) {
            return binary;
        }
        java.util.List<java.util.List<String>> builds = new java.util.ArrayList<>();
        builds.add(java.util.List.of("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", binary.toString(),
                sources.resolve("jobs_example.c").toString(), sources.resolve("jobs_client.c").toString()));
        if (java.nio.file.Files.exists(Path.of("/usr/include/openssl/ssl.h"))) {
            builds.add(java.util.List.of("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-DJOBS_WITH_OPENSSL", "-o",
                    dir.resolve("jobs_example_tls").toString(), sources.resolve("jobs_example.c").toString(),
                    sources.resolve("jobs_client.c").toString(), "-lssl", "-lcrypto"));
        }
        for (java.util.List<String> build : builds) {
            Process gcc = new ProcessBuilder(build).redirectErrorStream(true).start();
            String compiled = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(gcc.waitFor()).as(compiled).isZero();
        }
        return binary;
    }

    private static void assertRefusedThenClosed(int port, byte[] frame, int code) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(60_000);
            assertThat(errorCode(exchange(s, 3, frame))).isEqualTo(code);
            assertThat(s.getInputStream().read()).as("closed after the error").isEqualTo(-1);
        }
    }

    /** Sends a frame and reads the answer's whole frame, which must have {@code opcode}. */
    static byte[] exchange(Socket s, int opcode, byte[] frame) throws IOException {
        s.setSoTimeout(120_000);
        OutputStream out = s.getOutputStream();
        out.write(frame);
        out.flush();
        DataInputStream in = new DataInputStream(s.getInputStream());
        byte[] header = new byte[10];
        in.readFully(header);
        assertThat(Arrays.copyOf(header, 5)).containsExactly('J', 'O', 'B', 'S', 1);
        int length = ByteBuffer.wrap(header, 6, 4).getInt();
        byte[] answer = Arrays.copyOf(header, 10 + length);
        in.readFully(answer, 10, length);
        if (opcode >= 0) { // a negative one: any
            assertThat(header[5]).as("opcode of %s", Arrays.toString(answer)).isEqualTo((byte) opcode);
        }
        return answer;
    }

    static int errorCode(byte[] frame) {
        return ByteBuffer.wrap(frame, 10, 2).getShort() & 0xFFFF;
    }

    /** Each sample's position and seed, read from a JOB_RESPONSE as docs/jobs.md lays its payload out. */
    static java.util.List<Long> samplePositionsAndSeeds(byte[] response) {
        ByteBuffer in = ByteBuffer.wrap(response, 10 + 24, response.length - 34);
        int size = in.getInt();
        assertThat(size).isEqualTo(response.length - 38);
        java.util.List<Long> out = new java.util.ArrayList<>();
        for (int n = in.getInt(); n > 0; n--) {
            out.add(in.getLong());
            out.add(in.getLong());
            in.get();
            int tokens = in.getInt();
            in.position(in.position() + 4 * tokens);
            int text = in.getInt();
            in.position(in.position() + text);
        }
        assertThat(in.remaining()).isZero();
        return out;
    }

    static byte[] request(long seed, long step, long position) {
        return frame(0, ByteBuffer.allocate(24).putLong(seed).putLong(step).putLong(position).array());
    }

    static byte[] resultFrame(long seed, long step, long position, byte[] data) {
        return frame(1, ByteBuffer.allocate(28 + data.length).putLong(seed).putLong(step).putLong(position)
                .putInt(data.length).put(data).array());
    }

    static byte[] frame(int opcode, byte[] payload) {
        return ByteBuffer.allocate(10 + payload.length).put("JOBS".getBytes(StandardCharsets.US_ASCII)).put((byte) 1)
                .put((byte) opcode).putInt(payload.length).put(payload).array();
    }
}
