package io.butterfly.cli.bench;

import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.process.ServiceProcess;
import io.butterfly.cli.process.ServiceSupervisor;
import io.butterfly.cli.process.Signal;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code bench-detect}: failure-detection time and false positives on a running cluster.
 *
 * <p>Kills: SIGKILL a worker, read the coordinator's {@code failed_at} for it, detection time =
 * failed_at - kill time (same machine, same clock); then restart the worker with its original command
 * line and wait until it heartbeats and its stage is READY again. Pauses: SIGSTOP a worker for one
 * second, SIGCONT, and count the pauses after which the coordinator had marked it FAILED (each one is a
 * false positive). Workers are taken in turn. Starts a cluster (demo model) if none is running and
 * stops it again at the end.
 */
@Command(name = "bench-detect", description = "failure detection: SIGKILL -> FAILED time (min/p50/p99) and false FAILED"
        + " after 1 s SIGSTOP pauses (starts a cluster if none)")
public final class DetectBenchCommand implements Callable<Integer> {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final long DETECT_TIMEOUT_MS = 15_000;
    private static final long RECOVER_TIMEOUT_MS = 300_000;

    @Spec
    CommandSpec spec;

    @Option(names = "--workers", paramLabel = "N", description = "workers of a cluster it starts (default 3)")
    int workers = 3;

    @Option(names = "--kills", paramLabel = "N", description = "SIGKILLs (default 20)")
    int kills = 20;

    @Option(names = "--pauses", paramLabel = "N", description = "SIGSTOP pauses (default 20)")
    int pauses = 20;

    @Option(names = "--pause-ms", paramLabel = "MS", description = "how long a pause lasts (default 1000)")
    long pauseMs = 1000;

    @Option(names = "--hangs", paramLabel = "N", description = "workers stopped until FAILED (default 5)")
    int hangs = 5;

    private Launcher launcher;
    private ServiceSupervisor supervisor;
    private String coordinator;
    private PrintWriter out;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @Override
    public Integer call() throws Exception {
        launcher = Launcher.fromEnvironment();
        supervisor = launcher.supervisor();
        coordinator = launcher.ports().coordinatorUrl();
        out = spec.commandLine().getOut();
        return run(workers, kills, pauses, pauseMs, hangs);
    }

    int run(int workers, int kills, int pauses, long pauseMs, int hangs) throws Exception {
        boolean started = false;
        if (!clusterRunning()) {
            out.println("no cluster running: starting one with " + workers + " workers");
            launcher.up(UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE).withWorkers(workers), out);
            started = true;
        }
        try {
            List<Proc> procList = workerProcs();
            if (procList.isEmpty()) {
                throw new IllegalStateException("no worker processes in " + launcher.home().processList());
            }
            awaitServing(procList);
            out.printf("cluster: %d workers %s%n", procList.size(), procList.stream().map(Proc::name).toList());

            List<Long> detections = new ArrayList<>();
            int missed = 0;
            int collateral = 0; // FAILED verdicts on workers nobody touched
            for (int i = 0; i < kills; i++) {
                Proc p = workerProcs().get(i % procList.size());
                Map<String, Long> before = failedAt(procList);
                Long detected = killAndRestart(p, i + 1, kills);
                collateral += collateral(before, p);
                if (detected == null) {
                    missed++;
                } else {
                    detections.add(detected);
                }
            }

            int wrongFailed = 0;
            int suspected = 0;
            for (int i = 0; i < pauses; i++) {
                Proc p = workerProcs().get(i % procList.size());
                Map<String, Long> before = failedAt(procList);
                PauseOutcome o = pause(p, pauseMs, i + 1, pauses);
                collateral += collateral(before, p);
                wrongFailed += o.failed ? 1 : 0;
                suspected += o.suspected ? 1 : 0;
            }

            List<Long> hangDetections = new ArrayList<>();
            for (int i = 0; i < hangs; i++) {
                Proc p = workerProcs().get(i % procList.size());
                Map<String, Long> before = failedAt(procList);
                Long detected = hang(p, i + 1, hangs);
                collateral += collateral(before, p);
                if (detected != null) {
                    hangDetections.add(detected);
                }
            }

            out.println();
            if (kills > 0) {
                out.printf(Locale.ROOT, "detection (SIGKILL -> FAILED), %d kills: min %d ms, p50 %d ms, p99 %d ms, max %d ms%s%n",
                        detections.size(), Stats.percentile(detections, 0), Stats.percentile(detections, 50),
                        Stats.percentile(detections, 99), Stats.percentile(detections, 100),
                        missed == 0 ? "" : ", " + missed + " NOT detected within " + DETECT_TIMEOUT_MS + " ms");
            }
            if (pauses > 0) {
                out.printf(Locale.ROOT, "pauses (SIGSTOP %d ms): %d/%d wrongly marked FAILED (%d/%d suspected and cleared)%n",
                        pauseMs, wrongFailed, pauses, suspected - wrongFailed, pauses);
            }
            if (hangs > 0) {
                out.printf(Locale.ROOT, "hangs (SIGSTOP until FAILED; phi alone, the stream stays open), %d/%d detected: "
                        + "min %d ms, p50 %d ms, max %d ms%n", hangDetections.size(), hangs, Stats.percentile(hangDetections, 0),
                        Stats.percentile(hangDetections, 50), Stats.percentile(hangDetections, 100));
            }
            out.printf("untouched workers wrongly marked FAILED meanwhile (e.g. starved while another restarted): %d%n",
                    collateral);
            boolean ok = missed == 0 && wrongFailed == 0 && collateral == 0 && (detections.isEmpty() || Stats.percentile(detections, 99) <= 1_000);
            out.println(ok ? "targets met: detection p99 <= 1000 ms, no false FAILED" : "targets NOT met");
            return ok ? 0 : 1;
        } finally {
            if (started) {
                launcher.down();
            }
        }
    }

    /** Returns the detection time in ms, or null when the coordinator did not mark the node FAILED in time. */
    private Long killAndRestart(Proc p, int n, int total) throws Exception {
        awaitNodeServing(p.nodeId());
        long killMs = System.currentTimeMillis();
        if (!supervisor.signal(p.process(), Signal.KILL)) {
            throw new IllegalStateException(p + " is gone");
        }
        Long detected = null;
        long deadline = killMs + DETECT_TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            JsonNode node = node(p.nodeId());
            if (node != null && "FAILED".equals(node.path("state").asString())) {
                long failedAt = epochMs(node.path("failed_at"));
                if (failedAt >= killMs) {
                    detected = failedAt - killMs;
                    out.printf(Locale.ROOT, "kill %2d/%d %s: FAILED after %4d ms (silent %d ms; %s)%n", n, total,
                            p.name(), detected, failedAt - epochMs(node.path("last_heartbeat_at_verdict")),
                            node.path("failure_cause").asString());
                    break;
                }
            }
            Thread.sleep(10);
        }
        if (detected == null) {
            out.printf("kill %2d/%d %s: NOT marked FAILED within %d ms%n", n, total, p.name(), DETECT_TIMEOUT_MS);
        }
        supervisor.awaitExit(p.process(), Duration.ofSeconds(30));
        supervisor.restart(p.name());
        long t0 = System.currentTimeMillis();
        awaitNodeServing(p.nodeId());
        awaitSystemReady();
        out.printf("         %s restarted, heartbeating and READY again after %.1f s%n", p.name(),
                (System.currentTimeMillis() - t0) / 1000.0);
        return detected;
    }

    private record PauseOutcome(boolean suspected, boolean failed) {
    }

    private PauseOutcome pause(Proc p, long pauseMs, int n, int total) throws Exception {
        awaitNodeServing(p.nodeId());
        Thread.sleep(300); // a few regular beats since the last pause
        long stopMs = System.currentTimeMillis();
        supervisor.signal(p.process(), Signal.STOP);
        Thread.sleep(pauseMs);
        supervisor.signal(p.process(), Signal.CONT);
        boolean suspected = false;
        boolean failed = false;
        // Watch until the node's heartbeats have certainly resumed and any verdict has been taken.
        long until = System.currentTimeMillis() + 2_000;
        while (System.currentTimeMillis() < until) {
            JsonNode node = node(p.nodeId());
            if (node != null) {
                suspected |= epochMs(node.path("suspected_at")) >= stopMs;
                failed |= epochMs(node.path("failed_at")) >= stopMs;
            }
            Thread.sleep(20);
        }
        out.printf("pause %2d/%d %s: %s%n", n, total, p.name(),
                failed ? "wrongly marked FAILED" : suspected ? "SUSPECT, then cleared" : "never suspected");
        if (failed) {
            awaitNodeServing(p.nodeId());
            awaitSystemReady();
        }
        return new PauseOutcome(suspected, failed);
    }

    /**
     * Stops a worker until the coordinator marks it FAILED (a hung process: its connection stays open, so
     * only phi can tell), then resumes it; it comes back with its partition and the system is READY again.
     * Returns the time from SIGSTOP to FAILED, or null if not detected in time.
     */
    private Long hang(Proc p, int n, int total) throws Exception {
        awaitNodeServing(p.nodeId());
        Thread.sleep(300);
        long stopMs = System.currentTimeMillis();
        supervisor.signal(p.process(), Signal.STOP);
        Long detected = null;
        try {
            long deadline = stopMs + DETECT_TIMEOUT_MS;
            while (System.currentTimeMillis() < deadline) {
                JsonNode node = node(p.nodeId());
                long failedAt = node == null ? -1 : epochMs(node.path("failed_at"));
                if (failedAt >= stopMs) {
                    detected = failedAt - stopMs;
                    out.printf(Locale.ROOT, "hang  %2d/%d %s: FAILED after %4d ms (%s)%n", n, total, p.name(), detected,
                            node.path("failure_cause").asString());
                    break;
                }
                Thread.sleep(10);
            }
        } finally {
            supervisor.signal(p.process(), Signal.CONT);
        }
        if (detected == null) {
            out.printf("hang  %2d/%d %s: NOT marked FAILED within %d ms%n", n, total, p.name(), DETECT_TIMEOUT_MS);
        }
        long t0 = System.currentTimeMillis();
        awaitNodeServing(p.nodeId());
        awaitSystemReady();
        out.printf("         %s resumed, back READY with its partition after %.1f s%n", p.name(),
                (System.currentTimeMillis() - t0) / 1000.0);
        return detected;
    }

    private Map<String, Long> failedAt(List<Proc> workers) {
        Map<String, Long> out = new HashMap<>();
        for (Proc p : workers) {
            JsonNode node = node(p.nodeId());
            out.put(p.nodeId(), node == null ? -1 : epochMs(node.path("failed_at")));
        }
        return out;
    }

    /** Counts (and reports) workers other than {@code target} that were marked FAILED since {@code before}. */
    private int collateral(Map<String, Long> before, Proc target) throws Exception {
        int count = 0;
        for (Map.Entry<String, Long> e : before.entrySet()) {
            if (e.getKey().equals(target.nodeId())) {
                continue;
            }
            JsonNode node = node(e.getKey());
            if (node != null && epochMs(node.path("failed_at")) > e.getValue()) {
                count++;
                out.printf("         collateral: %s (untouched) was marked FAILED: %s%n", e.getKey(),
                        node.path("failure_cause").asString());
                awaitNodeServing(e.getKey());
                awaitSystemReady();
            }
        }
        return count;
    }

    /** The node heartbeats on an open stream and its partition is READY. */
    private void awaitNodeServing(String nodeId) throws Exception {
        long deadline = System.currentTimeMillis() + RECOVER_TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            JsonNode node = node(nodeId);
            if (node != null && "READY".equals(node.path("state").asString())
                    && "OPEN".equals(node.path("heartbeat_stream").asString())) {
                return;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException(nodeId + " did not become READY with an open heartbeat stream in time");
    }

    private void awaitSystemReady() throws Exception {
        long deadline = System.currentTimeMillis() + RECOVER_TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            JsonNode s = get("/api/v1/system/state");
            if (s != null && "READY".equals(s.path("system_state").asString())) {
                return;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the system did not return to READY in time");
    }

    private void awaitServing(List<Proc> workers) throws Exception {
        awaitSystemReady();
        for (Proc p : workers) {
            awaitNodeServing(p.nodeId());
        }
    }

    /** A worker process and the node id it serves as. */
    private record Proc(ServiceProcess process) {
        String name() {
            return process.name();
        }

        String nodeId() {
            return process.nodeId();
        }
    }

    private List<Proc> workerProcs() {
        return supervisor.listed().stream().filter(p -> "worker".equals(p.role())).map(Proc::new).toList();
    }

    private boolean clusterRunning() {
        boolean alive = workerProcs().stream().anyMatch(p -> supervisor.isRunning(p.process()));
        return alive && get("/api/v1/system/state") != null;
    }

    private JsonNode node(String id) {
        return get("/api/v1/nodes/" + id + "/state");
    }

    private JsonNode get(String path) {
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(coordinator + path))
                    .timeout(Duration.ofSeconds(2)).GET().build(), HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 ? JSON.readTree(r.body()) : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static long epochMs(JsonNode text) {
        return text == null || text.isNull() || text.isMissingNode() ? -1 : Instant.parse(text.asString()).toEpochMilli();
    }
}
