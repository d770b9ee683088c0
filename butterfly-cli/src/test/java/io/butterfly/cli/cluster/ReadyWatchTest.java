package io.butterfly.cli.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.butterfly.common.api.ApiJson;
import io.butterfly.common.api.SystemStatus;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Watching a stand-in coordinator that answers a scripted series of system states. */
class ReadyWatchTest {

    private static final String LOADING = """
            {"system_state": "BOOTSTRAPPING", "pipeline": ["worker-0"], "nodes": [
              {"id": "worker-0", "role": "worker", "layer_range": [0, 6], "progress": 0.5, "partition_state": "DOWNLOADING",
               "load": {"estimated_completion_secs": 2.2}}]}
            """;
    private static final String READY = """
            {"system_state": "READY", "model_id": "demo", "epoch": 1, "merkle_root": "ab12", "pipeline": ["worker-0"],
             "spares": ["worker-1"], "nodes": [
              {"id": "worker-0", "role": "worker", "layer_range": [0, 6], "progress": 1.0, "partition_state": "READY"},
              {"id": "worker-1", "role": "worker", "progress": 0.0, "partition_state": "UNLOADED"}]}
            """;

    private HttpServer coordinator;

    @AfterEach
    void stop() {
        if (coordinator != null) {
            coordinator.stop(0);
        }
    }

    private String coordinatorAnswering(List<String> states) throws Exception {
        AtomicInteger next = new AtomicInteger();
        coordinator = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        coordinator.createContext("/api/v1/system/state", exchange -> {
            byte[] body = states.get(Math.min(next.getAndIncrement(), states.size() - 1)).getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream o = exchange.getResponseBody()) {
                o.write(body);
            }
        });
        coordinator.start();
        return "http://127.0.0.1:" + coordinator.getAddress().getPort();
    }

    @Test
    void printsEachWorkersProgressOnceThenReadyAndTheSpares() throws Exception {
        StringWriter out = new StringWriter();
        String url = coordinatorAnswering(List.of(LOADING, LOADING, READY));

        assertThat(ReadyWatch.start(url, Duration.ofSeconds(30), new PrintWriter(out, true)).await()).isTrue();

        assertThat(out.toString().lines().toList()).containsExactly(
                "  worker-0   layers [0, 6)      [##########..........]  50% DOWNLOADING ETA 2s",
                "  worker-0   layers [0, 6)      [####################] 100% READY",
                "  worker-1   unassigned         [....................]   0% UNLOADED",
                "READY: model demo on 1 worker(s), epoch 1, merkle root ab12",
                "spare worker-1: no layers, standing by to take the stage of a worker that fails or is drained");
    }

    @Test
    void aFailedWorkerEndsTheWatch() throws Exception {
        StringWriter out = new StringWriter();
        String url = coordinatorAnswering(List.of("""
                {"system_state": "BOOTSTRAPPING", "nodes": [{"id": "worker-0", "role": "worker", "progress": 0.0,
                  "partition_state": "FAILED", "error": {"code": "CHECKSUM_MISMATCH", "message": "shard 3"}}]}
                """));

        assertThat(ReadyWatch.start(url, Duration.ofSeconds(30), new PrintWriter(out, true)).await()).isFalse();

        assertThat(out.toString()).contains("worker worker-0 failed: CHECKSUM_MISMATCH: shard 3");
    }

    @Test
    void theSparesAreNamed() {
        SystemStatus state = ApiJson.reader().readValue("""
                {"pipeline": ["worker-0", "worker-1"], "spares": ["worker-2", "worker-3"], "nodes": [
                  {"id": "coordinator-0", "role": "coordinator"},
                  {"id": "worker-0", "role": "worker"}, {"id": "worker-1", "role": "worker"},
                  {"id": "worker-2", "role": "worker"}, {"id": "worker-3", "role": "worker"}]}
                """, SystemStatus.class);
        assertThat(ReadyWatch.spares(state)).containsExactly("worker-2", "worker-3");
    }
}
