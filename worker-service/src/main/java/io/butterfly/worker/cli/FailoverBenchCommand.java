package io.butterfly.worker.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./butterfly bench-failover}: how fast the coordinator group recovers from losing its leader.
 *
 * <p>Each round: find the Raft leader (asking every replica), SIGKILL it, then poll the surviving replicas
 * until one of them reports itself LEADER in a higher term and serves {@code system/state} as READY; the time
 * from the kill to that answer is the failover time. The killed replica is then started again with its
 * original command line (it catches up from its Raft storage) before the next round. Starts a cluster with
 * three coordinators if none is running, and stops it at the end.
 */
public final class FailoverBenchCommand {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final long FAILOVER_TIMEOUT_MS = 30_000;
    private static final long REJOIN_TIMEOUT_MS = 180_000;
    private static final Args.Spec SPEC = new Args.Spec("bench-failover",
            Set.of("launcher", "state", "kills", "workers"), Set.of());

    private final LauncherProcesses processes;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    private final PrintStream out = System.out;

    private record Replica(String name, long pid, String nodeId, int httpPort) {
        String url() {
            return "http://127.0.0.1:" + httpPort;
        }
    }

    FailoverBenchCommand(Path launcher, Path state) {
        this.processes = new LauncherProcesses(launcher, state);
    }

    public static void main(String[] raw) throws Exception {
        Args args;
        int kills;
        int workers;
        try {
            args = Args.parse(raw, 0, SPEC);
            kills = args.intOption("kills", 20);
            workers = args.intOption("workers", 2);
        } catch (Args.UsageException e) {
            System.exit(Args.usageError(e, System.err));
            return;
        }
        FailoverBenchCommand bench = new FailoverBenchCommand(Path.of(args.option("launcher", "./butterfly")),
                Path.of(args.option("state", ".butterfly")));
        System.exit(bench.run(kills, workers));
    }

    int run(int kills, int workers) throws Exception {
        boolean started = false;
        if (replicas().size() < 3 || replicas().stream().noneMatch(r -> state(r) != null)) {
            out.println("no cluster with 3 coordinators running: starting one with " + workers + " workers");
            processes.launch("up", "--coordinators", "3", "--workers", String.valueOf(workers));
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
                    DetectBenchCommand.percentile(failovers, 0), DetectBenchCommand.percentile(failovers, 50),
                    DetectBenchCommand.percentile(failovers, 99), DetectBenchCommand.percentile(failovers, 100),
                    missed == 0 ? "" : ", " + missed + " NOT recovered within " + FAILOVER_TIMEOUT_MS + " ms");
            boolean ok = missed == 0 && !failovers.isEmpty() && DetectBenchCommand.percentile(failovers, 50) <= 500
                    && DetectBenchCommand.percentile(failovers, 99) <= 2_000;
            out.println(ok ? "targets met (p50 <= 500 ms, p99 <= 2 s)" : "targets NOT met (p50 <= 500 ms, p99 <= 2 s)");
            return ok ? 0 : 1;
        } finally {
            if (started) {
                processes.launch("down");
            }
        }
    }

    /** One round; the failover time in ms, or null when no replica took over in time. */
    private Long killLeader(int round, int rounds) throws Exception {
        Replica leader = awaitLeaderServing(REJOIN_TIMEOUT_MS);
        JsonNode before = state(leader);
        long oldTerm = before.path("raft").path("term").asLong();
        List<String> command = LauncherProcesses.commandLine(leader.pid());
        LauncherProcesses.signal("KILL", leader.pid());
        long killedAt = System.nanoTime();
        List<Replica> survivors = replicas().stream().filter(r -> r.pid() != leader.pid()).toList();
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
        processes.restart(leader.name(), command);
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

    /** Coordinator replicas from the launcher's process list: {@code name role pid node_id http grpc}. */
    private List<Replica> replicas() throws IOException {
        List<Replica> out = new ArrayList<>();
        for (String[] f : processes.entries()) {
            if (f.length >= 5 && "coordinator".equals(f[1])) {
                out.add(new Replica(f[0], Long.parseLong(f[2]), f[3], Integer.parseInt(f[4])));
            }
        }
        return out;
    }

}
