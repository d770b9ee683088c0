package io.butterfly.cli.jobs;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.butterfly.cli.command.Commands;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;

/** {@code ./butterfly jobs} against a stand-in for the coordinator's job endpoints (a JDK HttpServer). */
class JobsCommandTest {

    @TempDir
    Path dir;

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();
    private final Map<String, String> received = new ConcurrentHashMap<>();
    private HttpServer coordinator;
    private volatile int progressCalls;

    @BeforeEach
    void startCoordinator() throws Exception {
        coordinator = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        coordinator.createContext("/api/v1/jobs/datasets", e -> {
            keep(e);
            answer(e, 201, "{\"sha256\": \"" + "ab".repeat(32) + "\", \"samples\": 2, \"bytes\": 40}");
        });
        coordinator.createContext("/api/v1/jobs", e -> {
            if (e.getRequestMethod().equals("POST")) {
                keep(e);
                answer(e, 201, "{\"id\": \"gen\"}");
            } else if (e.getRequestURI().getPath().endsWith("/results")) {
                answer(e, 200, "{\"step\":0,\"position\":0}\n{\"step\":0,\"position\":2}\n");
            } else {
                boolean finished = ++progressCalls >= 2;
                answer(e, 200, "{\"id\": \"gen\", \"progress\": {\"done\": " + (finished ? 4 : 2) + ", \"leased\": "
                        + (finished ? 0 : 2) + ", \"pending\": 0, \"results\": " + (finished ? 2 : 1)
                        + ", \"results_per_second\": 0.5}}");
            }
        });
        coordinator.start();
    }

    @AfterEach
    void stopCoordinator() {
        coordinator.stop(0);
    }

    private void keep(HttpExchange e) throws IOException {
        received.put(e.getRequestURI().getPath(), new String(e.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
        received.put(e.getRequestURI().getPath() + " auth", String.valueOf(e.getRequestHeaders().getFirst("Authorization")));
    }

    private static void answer(HttpExchange e, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        e.getResponseHeaders().add("Content-Type", "application/json");
        e.sendResponseHeaders(status, bytes.length);
        try (OutputStream o = e.getResponseBody()) {
            o.write(bytes);
        }
    }

    private int run(String... args) {
        CommandLine line = Commands.line(new JobsCommand());
        line.setOut(new PrintWriter(out, true));
        line.setErr(new PrintWriter(err, true));
        String[] all = new String[args.length + 4];
        System.arraycopy(args, 0, all, 0, args.length);
        System.arraycopy(new String[] {"--url", "http://127.0.0.1:" + coordinator.getAddress().getPort(),
                "--admin-key", "k-admin"}, 0, all, args.length, 4);
        return line.execute(all);
    }

    @Test
    void createImportsTheDatasetThenDefinesTheJobOverItsSha256() throws Exception {
        Path dataset = dir.resolve("d.jsonl");
        Files.writeString(dataset, "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n");
        assertThat(run("create", "gen", "--dataset", dataset.toString(), "--batch-size", "2", "--seed", "42",
                "--temperature", "0.5")).as(err.toString()).isZero();
        assertThat(received.get("/api/v1/jobs/datasets")).isEqualTo(Files.readString(dataset));
        assertThat(received.get("/api/v1/jobs auth")).isEqualTo("Bearer k-admin");
        JsonNode job = JobsCommand.JSON.readTree(received.get("/api/v1/jobs"));
        assertThat(job.path("dataset_sha256").asString()).isEqualTo("ab".repeat(32));
        assertThat(job.path("batch_size").asInt()).isEqualTo(2);
        assertThat(job.path("seed").asLong()).isEqualTo(42);
        assertThat(job.path("temperature").asDouble()).isEqualTo(0.5);
        assertThat(job.has("max_tokens")).as("left to the coordinator's default").isFalse();
    }

    @Test
    void watchPrintsProgressUntilNothingIsLeasedOrPending() {
        assertThat(run("watch", "gen", "--interval", "0.01")).as(err.toString()).isZero();
        assertThat(out.toString().lines().toList()).containsExactly(
                "gen: done 2, leased 2, pending 0 positions; 1 results, 0.50 results/s",
                "gen: done 4, leased 0, pending 0 positions; 2 results, 0.50 results/s");
    }

    @Test
    void resultsAreWrittenAsTheyCome() throws Exception {
        Path file = dir.resolve("r.jsonl");
        assertThat(run("results", "gen", "-o", file.toString())).as(err.toString()).isZero();
        assertThat(Files.readAllLines(file)).isEqualTo(List.of("{\"step\":0,\"position\":0}", "{\"step\":0,\"position\":2}"));
        assertThat(run("results", "gen")).isZero();
        assertThat(out.toString()).contains("{\"step\":0,\"position\":2}");
    }
}
