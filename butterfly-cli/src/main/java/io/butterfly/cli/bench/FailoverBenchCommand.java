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
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code bench-failover}: how fast the coordinator group recovers from losing its leader.
 *
 * <p>Each round: find the Raft leader (asking every replica), SIGKILL it, then poll the surviving replicas
 * until one of them reports itself LEADER in a higher term and serves {@code system/state} as READY; the time
 * from the kill to that answer is the failover time. The killed replica is then started again with its
 * original command line (it catches up from its Raft storage) before the next round. Starts a cluster with
 * three coordinators if none is running, and stops it at the end.
 */
@Command(name = "bench-failover", description = "coordinator failover: SIGKILL the Raft leader -> a new leader serves"
        + " READY (min/p50/p99)")
public final class FailoverBenchCommand implements Callable<Integer> {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final long FAILOVER_TIMEOUT_MS = 30_000;
    private static final long REJOIN_TIMEOUT_MS = 180_000;

    @Spec
    CommandSpec spec;

    @Option(names = "--kills", paramLabel = "N", description = "leaders killed (default 20)")
    int kills = 20;

    @Option(names = "--workers", paramLabel = "N", description = "workers of a cluster it starts (default 2)")
    int workers = 2;

    private Launcher launcher;
    private ServiceSupervisor supervisor;
    private PrintWriter out;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();

    private record Replica(ServiceProcess process) {
        String name() {
            return process.name();
        }

        String nodeId() {
            return process.nodeId();
        }

        String url() {
            return "http://127.0.0.1:" + process.httpPort();
        }
    }

    @Override
    public Integer call() throws Exception {
        launcher = Launcher.fromEnvironment();
        supervisor = launcher.supervisor();
        out = spec.commandLine().getOut();
        return run(kills, workers);
    }

    int run(int kills, int workers) throws Exception {
        boolean started = false;
        if (replicas().size() < 3 || replicas().stream().noneMatch(r -> state(r) != null)) {
            out.println("no cluster with 3 coordinators running: starting one with " + workers + " workers");
            launcher.up(UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE).withCoordinators(3).withWorkers(workers), out);
            started = true;
        }
        try {
            List<Long> failovers = new ArrayList<>();
            int missed = 0;
            for (int i = 1; i <= kills; i++) {
                Long ms = killLeader(i, kills);
                if (ms == null) {
                    missed++;
                } else {
                    failovers.add(ms);
                }
            }
            out.println();
            out.printf(Locale.ROOT, "failover (SIGKILL leader -> new leader serves READY), %d kills: min %d ms, p50 %d ms,"
                            + " p99 %d ms, max %d ms%s%n", failovers.size(),
                    Stats.percentile(failovers, 0), Stats.percentile(failovers, 50),
                    Stats.percentile(failovers, 99), Stats.percentile(failovers, 100),
                    missed == 0 ? "" : ", " + missed + " NOT recovered within " + FAILOVER_TIMEOUT_MS + " ms");
            boolean ok = missed == 0 && !failovers.isEmpty() && Stats.percentile(failovers, 50) <= 500
                    && Stats.percentile(failovers, 99) <= 2_000;
            out.println(ok ? "targets met (p50 <= 500 ms, p99 <= 2 s)" : "targets NOT met (p50 <= 500 ms, p99 <= 2 s)");
            return ok ? 0 : 1;
        } finally {
            if (started) {
                launcher.down();
            }
        }
    }

    /** One round; the failover time in ms, or null when no replica took over in time. */
    private Long killLeader(int round, int rounds) throws Exception {
        Replica leader = awaitLeaderServing(REJOIN_TIMEOUT_MS);
        JsonNode before = state(leader);
        long oldTerm = before.path("raft").path("term").asLong();
        supervisor.signal(leader.process(), Signal.KILL);
        long killedAt = System.nanoTime();
        List<Replica> survivors = replicas().stream().filter(r -> !r.name().equals(leader.name())).toList();
        Long took = null;
        String newLeader = null;
        while (System.nanoTime() - killedAt < FAILOVER_TIMEOUT_MS * 1_000_000L) {
            for (Replica r : survivors) {
                JsonNode s = state(r);
                if (s != null && "LEADER".equals(s.path("raft").path("role").asString())
                        && s.path("raft").path("term").asLong() > oldTerm
                        && "READY".equals(s.path("system_state").asString())) {
                    took = (System.nanoTime() - killedAt) / 1_000_000;
                    newLeader = r.nodeId();
                    break;
                }
            }
            if (took != null) {
                break;
            }
            Thread.sleep(10);
        }
        out.printf(Locale.ROOT, "round %2d/%d: killed leader %s (term %d) -> %s%n", round, rounds, leader.nodeId(),
                oldTerm, took == null ? "no new leader serving READY within " + FAILOVER_TIMEOUT_MS + " ms"
                        : newLeader + " leads and serves READY after " + took + " ms");
        supervisor.awaitExit(leader.process(), Duration.ofSeconds(30));
        supervisor.restart(leader.name());
        awaitRejoined(leader);
        return took;
    }

    /** The replica every live replica agrees leads, once the system is READY. */
    private Replica awaitLeaderServing(long timeoutMs) throws Exception {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (System.nanoTime() < deadline) {
            for (Replica r : replicas()) {
                JsonNode s = state(r);
                if (s != null && "LEADER".equals(s.path("raft").path("role").asString())
                        && "READY".equals(s.path("system_state").asString())) {
                    return r;
                }
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("no coordinator leads a READY system within " + timeoutMs + " ms");
    }

    /** The restarted replica answers again and knows the leader (it has caught up with the group). */
    private void awaitRejoined(Replica killed) throws Exception {
        long deadline = System.nanoTime() + REJOIN_TIMEOUT_MS * 1_000_000L;
        Replica again = replicas().stream().filter(r -> r.name().equals(killed.name())).findFirst().orElseThrow();
        while (System.nanoTime() < deadline) {
            JsonNode s = state(again);
            JsonNode leaderId = s == null ? null : s.path("raft").path("leader_id");
            if (s != null && leaderId.isString() && !leaderId.asString().isEmpty()
                    && "READY".equals(s.path("system_state").asString())) {
                return;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException(killed.name() + " did not rejoin within " + REJOIN_TIMEOUT_MS + " ms");
    }

    private JsonNode state(Replica r) {
        try {
            HttpResponse<String> resp = http.send(HttpRequest.newBuilder(URI.create(r.url() + "/api/v1/system/state"))
                    .timeout(Duration.ofMillis(500)).GET().build(), HttpResponse.BodyHandlers.ofString());
            return resp.statusCode() == 200 ? JSON.readTree(resp.body()) : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** Coordinator replicas from the process list. */
    private List<Replica> replicas() {
        return supervisor.listed().stream().filter(p -> "coordinator".equals(p.role())).map(Replica::new).toList();
    }

}
