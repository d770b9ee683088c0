package io.butterfly.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The warm-up's settling rule against a real HTTP endpoint serving a compilation counter as Micrometer writes it. */
class JitSettlingTest {

    private final AtomicLong compileMs = new AtomicLong();
    private HttpServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    private String serve(String metricLine) throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/actuator/prometheus", exchange -> {
            byte[] body = ("# HELP jvm_compilation_time_ms_total The approximate accumulated elapsed time\n"
                    + "# TYPE jvm_compilation_time_ms_total counter\n"
                    + String.format(metricLine, (double) compileMs.get()) + "\njvm_threads_live_threads 12.0\n")
                    .getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @Test
    void settlesOnlyAfterAWindowOfRoundsWithLittleCompilation() throws Exception {
        String url = serve("jvm_compilation_time_ms_total{application=\"worker-service\",compiler=\"HotSpot\"} %s");
        JitSettling jit = new JitSettling(List.of(url, url)); // two services, the same counter twice
        jit.skip();
        for (int round = 0; round < JitSettling.WINDOW; round++) {
            compileMs.addAndGet(1_000); // 2 s of compilation over both services in a round of ~20 ms
            Thread.sleep(20);
            jit.roundEnded();
            assertThat(jit.settled()).isFalse();
        }
        assertThat(jit.recentShare()).isGreaterThan(1.0);
        for (int round = 0; round < JitSettling.WINDOW - 1; round++) {
            Thread.sleep(20);
            jit.roundEnded();
            assertThat(jit.settled()).as("a round that compiled is still in the window").isFalse();
        }
        Thread.sleep(20);
        jit.roundEnded();
        assertThat(jit.settled()).isTrue();
        assertThat(jit.recentShare()).isZero();
        compileMs.addAndGet(1_000);
        Thread.sleep(20);
        jit.roundEnded();
        assertThat(jit.settled()).as("compiling again").isFalse();
    }

    @Test
    void skippedTimeIsNotCounted() throws Exception {
        String url = serve("jvm_compilation_time_ms_total{compiler=\"HotSpot\"} %s");
        JitSettling jit = new JitSettling(List.of(url));
        jit.skip();
        compileMs.addAndGet(1_000);
        jit.skip(); // compilation while something else ran
        for (int round = 0; round < JitSettling.WINDOW; round++) {
            Thread.sleep(5);
            jit.roundEnded();
        }
        assertThat(jit.settled()).isTrue();
    }

    @Test
    void aServiceWithoutTheMetricIsAnError() throws Exception {
        String url = serve("jvm_gc_pause_seconds_count %s");
        JitSettling jit = new JitSettling(List.of(url));
        assertThatThrownBy(jit::skip).isInstanceOf(IOException.class).hasMessageContaining("jvm_compilation_time_ms_total");
    }
}
