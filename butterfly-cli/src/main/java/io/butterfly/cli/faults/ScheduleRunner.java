package io.butterfly.cli.faults;

import io.butterfly.cli.http.PlainHttp;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Runs one schedule against a running cluster under a {@link SteadyLoad}, then checks it: every task start a client
 * saw acknowledged is known to every replica afterwards and no replica is behind the highest epoch anyone reported
 * (nothing acknowledged lost), no token differs from the fault-free run's (wrong tokens), no term had two leaders
 * and the committed Raft logs agree ({@link RaftLogs}, when the caller can read them: split brain), and the cluster
 * is READY again within {@code readyWithin} of the last fault's end.
 */
public final class ScheduleRunner {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** Reads the replicas' committed logs after a schedule: each disagreement, described. */
    public interface LogCheck {
        List<String> disagreements() throws Exception;
    }

    private final Supplier<List<String>> replicas;
    private final Set<String> workers;
    private final List<SteadyLoad.Request> requests;
    private final int clients;
    private final Duration readyWithin;
    private final Consumer<String> out;

    /**
     * @param replicas    each coordinator replica's base URL
     * @param workers     the workers' node ids, all of which must be back for READY
     * @param requests    the load's requests, with their fault-free tokens
     * @param clients     concurrent clients
     * @param readyWithin how long after the last fault the cluster may take to be READY
     * @param out         told each fault and each problem
     */
    public ScheduleRunner(Supplier<List<String>> replicas, Set<String> workers, List<SteadyLoad.Request> requests,
                          int clients, Duration readyWithin, Consumer<String> out) {
        this.replicas = replicas;
        this.workers = Set.copyOf(workers);
        this.requests = List.copyOf(requests);
        this.clients = clients;
        this.readyWithin = readyWithin;
        this.out = out;
    }

    public Verdict run(FaultSchedule schedule, FaultInjector injector, LogCheck logs) throws Exception {
        History history = new History();
        long readyAfter = -1;
        try (ClusterWatch watch = new ClusterWatch(replicas, history, Duration.ofMillis(100));
             SteadyLoad load = new SteadyLoad(requests, replicas, history, Duration.ofSeconds(90))
                     .start(clients, schedule.seed())) {
            long t0 = System.nanoTime();
            for (Fault f : schedule.faults()) {
                sleepUntil(t0, f.startMs());
                out.accept("  " + f);
                injector.inject(f);
                sleepUntil(t0, f.endMs());
                injector.end(f);
            }
            long lastEnd = System.nanoTime();
            long deadline = lastEnd + readyWithin.toNanos();
            String waitedFor = null;
            while (System.nanoTime() < deadline) {
                String why = ClusterWatch.notReady(replicas.get(), workers);
                if (why == null) {
                    readyAfter = (System.nanoTime() - lastEnd) / 1_000_000;
                    break;
                }
                waitedFor = why;
                Thread.sleep(100);
            }
            if (readyAfter < 0) {
                out.accept("  NOT READY within " + readyWithin + " of the last fault: " + waitedFor);
            } else if (waitedFor != null) {
                out.accept("  READY after waiting for: " + waitedFor);
            }
        }
        long lost = lostTasks(history) + epochsBehind(history);
        long splitBrain = 0;
        for (var e : history.termsWithTwoLeaders().entrySet()) {
            out.accept("  SPLIT BRAIN: term " + e.getKey() + " led by " + e.getValue());
            splitBrain++;
        }
        for (String d : logs.disagreements()) {
            out.accept("  SPLIT BRAIN: committed logs differ: " + d);
            splitBrain++;
        }
        history.wrongOutcomes().forEach(w -> out.accept("  WRONG: " + w));
        long wrong = history.count(History.Outcome.WRONG_TOKENS) + history.count(History.Outcome.UNCLEAR);
        history.someFailures().stream().limit(3).forEach(f -> out.accept("  (failed clearly: " + f + ")"));
        out.accept(String.format(java.util.Locale.ROOT, "  requests %d: %d completed, %d failed clearly, %d wrong;"
                        + " %d task starts acknowledged; %d terms seen; READY %s after the last fault",
                history.requests(), history.count(History.Outcome.COMPLETED), history.count(History.Outcome.FAILED_CLEARLY),
                wrong, history.acknowledgedTasks().size(), history.termsSeen(),
                readyAfter < 0 ? "never" : String.format(java.util.Locale.ROOT, "%.2f s", readyAfter / 1e3)));
        return new Verdict(1, schedule.faults().size(), history.requests(), history.count(History.Outcome.COMPLETED),
                history.count(History.Outcome.FAILED_CLEARLY), lost, wrong, splitBrain,
                readyAfter < 0 ? List.of() : List.of(readyAfter));
    }

    /** Acknowledged task starts some replica does not know (after a few seconds for a restarted one to catch up). */
    private long lostTasks(History history) throws InterruptedException {
        long lost = 0;
        for (String task : history.acknowledgedTasks()) {
            for (String base : replicas.get()) {
                if (!knows(base, task)) {
                    out.accept("  LOST: task " + task + " is unknown at " + base);
                    lost++;
                }
            }
        }
        return lost;
    }

    private static boolean knows(String base, String task) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        do {
            try {
                if (PlainHttp.get(base + "/api/v1/tasks/" + task + "/state", Duration.ofSeconds(5)).status() == 200) {
                    return true;
                }
            } catch (IOException e) {
                // not answering yet
            }
            Thread.sleep(200);
        } while (System.nanoTime() < deadline);
        return false;
    }

    /** Replicas whose epoch is below the highest one a replica reported (a committed re-plan lost). */
    private long epochsBehind(History history) {
        long behind = 0;
        for (String base : replicas.get()) {
            JsonNode s = ClusterWatch.state(base);
            long epoch = s == null ? -1 : s.path("epoch").asLong();
            if (epoch < history.maxEpoch()) {
                out.accept("  LOST: " + base + " is at epoch " + epoch + ", below epoch " + history.maxEpoch() + " seen before");
                behind++;
            }
        }
        return behind;
    }

    private static void sleepUntil(long t0, long ms) throws InterruptedException {
        long wait = t0 / 1_000_000 + ms - System.nanoTime() / 1_000_000;
        if (wait > 0) {
            Thread.sleep(wait);
        }
    }

    /** The fault-free tokens of each request body, from one run of each at {@code base} before any fault. */
    public static List<SteadyLoad.Request> references(String base, List<String> bodies) throws IOException {
        List<SteadyLoad.Request> out = new ArrayList<>();
        for (String body : bodies) {
            PlainHttp.Response r = PlainHttp.postJson(base + "/api/v1/inference", body, Duration.ofMinutes(5));
            if (r.status() != 200) {
                throw new IOException("the fault-free run failed: HTTP " + r.status() + " " + r.body());
            }
            List<Long> tokens = new ArrayList<>();
            JSON.readTree(r.body()).path("token_ids").forEach(n -> tokens.add(n.asLong()));
            out.add(new SteadyLoad.Request(body, tokens));
        }
        return out;
    }

    /** {@code n} seeded request bodies: prompts of random token ids, alternately greedy and sampled with a seed. */
    public static List<String> bodies(long seed, int n, int vocab, int promptTokens, int maxTokens) {
        java.util.SplittableRandom random = new java.util.SplittableRandom(seed);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            StringBuilder prompt = new StringBuilder("[");
            int len = 1 + random.nextInt(promptTokens);
            for (int k = 0; k < len; k++) {
                prompt.append(k == 0 ? "" : ", ").append(3 + random.nextInt(vocab - 3));
            }
            out.add("{\"token_ids\": " + prompt + "], \"max_tokens\": " + maxTokens + ", \"ignore_eos\": true, "
                    + (i % 2 == 0 ? "\"temperature\": 0" : "\"temperature\": 0.8, \"seed\": " + random.nextInt(1 << 30)) + "}");
        }
        return out;
    }
}
