package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.GrafanaDashboard;
import io.butterfly.it.TinyModels;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;
import tools.jackson.databind.JsonNode;

/**
 * What an operator sees of a cluster (discovery, registry, two workers and a coordinator, in process: what it checks
 * crosses no process boundary), started once with API keys and with every service exporting its spans to an OTLP
 * receiver here: the keys guard generating
 * (a chat as a completion) and changing the cluster; a request is one trace through both stages; every metric of the
 * Grafana dashboard is exported; and the dashboard at {@code /}, in a real headless Chromium, streams a chat reply and
 * marks a killed worker FAILED (skipped where Debian's chromium and chromium-driver are not installed).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ObservabilityIT {

    static final String USER_KEY = "sk-butterfly-user-31f7";
    static final String ADMIN_KEY = "sk-butterfly-admin-8c02";
    static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
    /** The page as the test saw it, kept for a look after a failure. */
    static final Path SCREENSHOTS = Path.of("target");

    @TempDir
    static Path work;
    static InProcessCluster cluster;
    static OtlpReceiver otlp;

    @BeforeAll
    static void start() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        Path keys = Files.writeString(work.resolve("api-keys"), "# who may generate\n" + USER_KEY + "\n");
        Path adminKeys = Files.writeString(work.resolve("admin-api-keys"), ADMIN_KEY + "\n");
        otlp = new OtlpReceiver();
        cluster = new InProcessCluster(work);
        cluster.everyServiceWith("--management.opentelemetry.tracing.export.otlp.endpoint=" + otlp.endpoint(),
                "--management.opentelemetry.tracing.export.schedule-delay=200ms",
                "--management.tracing.sampling.probability=1.0");
        cluster.startDiscovery();
        cluster.startRegistry(model, "--butterfly.registry.api-keys.admin-file=" + adminKeys);
        cluster.startWorker(0);
        cluster.startWorker(1);
        cluster.startCoordinator(model.getFileName().toString(), 2,
                "--butterfly.coordinator.api-keys.file=" + keys, "--butterfly.coordinator.api-keys.admin-file=" + adminKeys);
        cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(6));
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
        if (otlp != null) {
            otlp.close();
        }
    }

    @Test
    @Order(1)
    void keysGuardGeneratingAndChangingTheClusterWhileReadsStayOpen() throws Exception {
        String completion = "{\"prompt\": \"The butterfly\", \"max_tokens\": 3, \"temperature\": 0}";
        ClusterApi.Reply none = post("/v1/completions", completion, null);
        assertThat(none.status()).isEqualTo(401);
        JsonNode error = none.json().path("error");
        assertThat(error.path("code").asString()).as(none.body()).isEqualTo("invalid_api_key");
        assertThat(error.path("type").asString()).isEqualTo("invalid_request_error");
        assertThat(post("/v1/completions", completion, "sk-butterfly-user-31f8").status()).isEqualTo(401);
        ClusterApi.Reply nativeNone = post("/api/v1/inference", completion, null);
        assertThat(nativeNone.status()).isEqualTo(401);
        assertThat(nativeNone.contentType()).startsWith("application/problem+json");
        assertThat(nativeNone.json().has("error")).as("OpenAI's error object only under /v1").isFalse();

        String chat = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": 3}";
        ClusterApi.Reply chatNone = post("/v1/chat/completions", chat, null);
        assertThat(chatNone.status()).as("a chat is an inference like a completion").isEqualTo(401);
        assertThat(chatNone.json().path("error").path("code").asString()).isEqualTo("invalid_api_key");

        assertThat(post("/v1/completions", completion, USER_KEY).status()).isEqualTo(200);
        ClusterApi.Reply chatted = post("/v1/chat/completions", chat, USER_KEY);
        assertThat(chatted.status()).as(chatted.body()).isEqualTo(200);
        assertThat(post("/api/v1/inference", completion, ADMIN_KEY).status()).isEqualTo(200);
        for (String open : List.of("/api/v1/system/state", "/api/v1/nodes", "/actuator/health/readiness", "/")) {
            assertThat(cluster.get(open).status()).as(open).isEqualTo(200);
        }
        // Changing the cluster takes an admin key (the rule covers drain, rebalance and whatever comes).
        ClusterApi.Reply drain = post("/api/v1/nodes/worker-0/drain", "{}", USER_KEY);
        assertThat(drain.status()).as(drain.body()).isEqualTo(403);
        // The registry's import: refused without an admin key; with one it reaches the import (which refuses the path).
        String importBody = "{\"path\": \"relative/dir\"}";
        String registry = cluster.urlOf("registry") + "/api/v1/models";
        assertThat(send(registry, importBody, null).status()).isEqualTo(401);
        assertThat(send(registry, importBody, USER_KEY).status()).as("a user key is no admin key").isEqualTo(401);
        ClusterApi.Reply imported = send(registry, importBody, ADMIN_KEY);
        assertThat(imported.status()).as(imported.body()).isEqualTo(400);
        assertThat(imported.json().path("field").asString()).isEqualTo("path");
        assertThat(cluster.getFrom("registry", "/api/v1/models").status()).isEqualTo(200);
    }

    /** The trace a client starts (its traceparent) holds the coordinator's spans and both stages' spans of every step. */
    @Test
    @Order(2)
    void aRequestIsOneTraceThroughEveryStage() throws Exception {
        HexFormat hex = HexFormat.of();
        Random rnd = new Random(34);
        String traceId = hex.formatHex(bytes(rnd, 16));
        HttpRequest request = HttpRequest.newBuilder(URI.create(cluster.coordinatorUrl() + "/v1/completions"))
                .header("Content-Type", "application/json").header("Authorization", "Bearer " + USER_KEY)
                .header("traceparent", "00-" + traceId + "-" + hex.formatHex(bytes(rnd, 8)) + "-01")
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\": \"The butterfly effect\", \"max_tokens\": 4,"
                        + " \"temperature\": 0}")).build();
        assertThat(cluster.send(request).status()).isEqualTo(200);

        List<OtlpReceiver.ExportedSpan> spans = awaitSpans(traceId, Duration.ofSeconds(30));
        List<OtlpReceiver.ExportedSpan> steps = named(spans, "pipeline step");
        assertThat(named(spans, "generate")).hasSize(1).allMatch(s -> s.service().equals("coordinator-service"));
        assertThat(steps).hasSizeGreaterThanOrEqualTo(4); // one per new token (the prompt may take one or more)
        Set<String> stepIds = steps.stream().map(OtlpReceiver.ExportedSpan::spanId).collect(Collectors.toSet());
        for (String worker : List.of("worker-0", "worker-1")) {
            List<OtlpReceiver.ExportedSpan> stage = named(spans, "stage step").stream()
                    .filter(s -> worker.equals(s.attributes().get("butterfly.node_id"))).toList();
            assertThat(stage).as(worker).hasSize(steps.size())
                    .allMatch(s -> s.service().equals("worker-service") && stepIds.contains(s.parentSpanId()));
        }
    }

    @Test
    @Order(3)
    void everyMetricTheGrafanaDashboardQueriesIsExported() throws Exception {
        // The GC pause series exists once the JVM has collected (Micrometer registers it at the first GC
        // notification, which comes asynchronously); the services share this JVM, which may not have yet.
        System.gc();
        Set<String> exported = exported();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!exported.containsAll(GrafanaDashboard.metrics()) && System.nanoTime() < deadline) {
            Thread.sleep(200);
            exported = exported();
        }
        Set<String> scraped = exported;
        assertThat(GrafanaDashboard.metrics()).isNotEmpty().allSatisfy(m -> assertThat(scraped).as(m).contains(m));
    }

    private Set<String> exported() throws Exception {
        Set<String> exported = new HashSet<>();
        for (String service : List.of("coordinator", "worker-0", "registry", "discovery")) {
            for (String line : cluster.getFrom(service, "/actuator/prometheus").body().split("\n")) {
                if (!line.startsWith("#") && !line.isBlank()) {
                    exported.add(line.split("[{ ]", 2)[0]);
                }
            }
        }
        return exported;
    }

    @Test
    @Order(4)
    void theDashboardShowsTheClusterAKilledWorkerAndTheRecovery() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER),
                "Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)");
        ChromeOptions options = new ChromeOptions().setBinary(CHROMIUM.toFile()).addArguments("--headless",
                "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1400,1200",
                "--user-data-dir=" + Files.createDirectories(work.resolve("chromium")));
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile())
                .usingAnyFreePort().build();
        WebDriver browser = new ChromeDriver(service, options);
        try {
            browser.get(cluster.coordinatorUrl() + "/");
            WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(20));
            wait.until(b -> "READY".equals(text(b, "#system-state")));
            wait.until(b -> "READY".equals(nodeState(b, "worker-1")) && "READY".equals(nodeState(b, "worker-0")));
            assertThat(browser.findElements(By.cssSelector("#layer-map .stage"))).hasSize(2);
            assertThat(text(browser, "#raft-leader")).isEqualTo("coordinator-0");
            assertThat(currentState(browser)).isEqualTo("READY");
            // The chat box streams a reply of the generated model's ChatML template, with the user's key.
            browser.findElement(By.id("api-key")).sendKeys(USER_KEY);
            WebElement maxTokens = browser.findElement(By.id("chat-max-tokens"));
            maxTokens.clear();
            maxTokens.sendKeys("4");
            browser.findElement(By.id("chat-input")).sendKeys("Hello");
            browser.findElement(By.id("chat-send")).click();
            String stats = new WebDriverWait(browser, Duration.ofSeconds(60)).until(b -> fresh(() -> {
                var done = b.findElements(By.cssSelector("#chat-log .msg.assistant .stats, #chat-log .msg.error"));
                return done.isEmpty() ? null : done.get(0).getText();
            }));
            assertThat(stats).matches("(length|stop) · \\d+ chunks in .*");
            Files.write(SCREENSHOTS.resolve("dashboard-ready.png"), ((ChromeDriver) browser).getScreenshotAs(OutputType.BYTES));

            cluster.kill("worker-1");
            new WebDriverWait(browser, Duration.ofSeconds(30)).until(b -> "FAILED".equals(nodeState(b, "worker-1")));
            assertThat(text(browser, "#transition-rows")).contains("worker-1").contains("FAILED");
            // The leader plans again over the survivor (docs/state-machines.md §6.1): worker-0 takes every layer and
            // the page shows the cluster READY again with one stage, worker-1 still listed as FAILED.
            new WebDriverWait(browser, Duration.ofSeconds(120)).until(b -> "READY".equals(text(b, "#system-state"))
                    && "READY".equals(nodeState(b, "worker-0"))
                    && b.findElements(By.cssSelector("#layer-map .stage")).size() == 1);
            assertThat(nodeState(browser, "worker-1")).isEqualTo("FAILED");
            assertThat(currentState(browser)).isEqualTo("READY");
        } finally {
            Files.write(SCREENSHOTS.resolve("dashboard-last.png"), ((ChromeDriver) browser).getScreenshotAs(OutputType.BYTES));
            browser.quit();
        }
    }

    /** The page redraws every second: an element found may be replaced before it is read, so a read is retried. */
    private static String text(WebDriver browser, String css) {
        return fresh(() -> browser.findElement(By.cssSelector(css)).getText());
    }

    /** The state the page shows for a node; null while it lists none. */
    private static String nodeState(WebDriver browser, String node) {
        return fresh(() -> {
            var cells = browser.findElements(By.cssSelector("tr[data-node='" + node + "'] .state"));
            return cells.isEmpty() ? null : cells.get(0).getText();
        });
    }

    private static String currentState(WebDriver browser) {
        return fresh(() -> browser.findElement(By.cssSelector("#state-diagram g.current")).getAttribute("data-state"));
    }

    private static String fresh(java.util.function.Supplier<String> read) {
        for (int attempt = 1; ; attempt++) {
            try {
                return read.get();
            } catch (StaleElementReferenceException e) {
                if (attempt == 5) {
                    throw e;
                }
            }
        }
    }

    private static List<OtlpReceiver.ExportedSpan> awaitSpans(String traceId, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<OtlpReceiver.ExportedSpan> spans = otlp.spans(traceId);
        // Every stage's spans have come once each worker sent as many stage spans as the coordinator sent steps.
        while (System.nanoTime() < deadline && !complete(spans)) {
            Thread.sleep(200);
            spans = otlp.spans(traceId);
        }
        return spans;
    }

    private static boolean complete(List<OtlpReceiver.ExportedSpan> spans) {
        int steps = named(spans, "pipeline step").size();
        return !named(spans, "generate").isEmpty() && steps > 0 && named(spans, "stage step").size() >= 2 * steps;
    }

    private static List<OtlpReceiver.ExportedSpan> named(List<OtlpReceiver.ExportedSpan> spans, String name) {
        return spans.stream().filter(s -> s.name().equals(name)).toList();
    }

    private static byte[] bytes(Random rnd, int n) {
        byte[] b = new byte[n];
        rnd.nextBytes(b);
        b[0] |= 1; // never all zero (an invalid id)
        return b;
    }

    private static ClusterApi.Reply post(String path, String json, String key) throws Exception {
        return send(cluster.coordinatorUrl() + path, json, key);
    }

    private static ClusterApi.Reply send(String url, String json, String key) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofMinutes(2))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json));
        if (key != null) {
            b.header("Authorization", "Bearer " + key);
        }
        return cluster.send(b.build());
    }
}
