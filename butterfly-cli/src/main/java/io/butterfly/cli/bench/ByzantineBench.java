package io.butterfly.cli.bench;

import io.butterfly.cli.cluster.ExitGuard;
import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.http.PlainHttp;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code bench-chaos --byzantine} (docs/verified-execution.md#audits): clusters of one stage and two spares where
 * worker-0 flips a bit in a fraction of its outputs ({@code butterfly.worker.unsafe-fault-injection}), every step
 * audited before sampling. Each trial starts a cluster, runs requests until the corrupting worker is evicted as
 * Byzantine (or a budget of requests passes), then runs the same requests again on the healthy workers: the trial is
 * detected if the worker was evicted, identical if every request gave the fault-free run's tokens. And
 * {@code --audit-cost}: the same cluster without a fault, audits off, 10 % beside the stream and 100 % before sampling,
 * each measured for tokens/s and time to first token in the same run.
 */
final class ByzantineBench {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Duration REQUEST_TIMEOUT = Duration.ofMinutes(5);
    /** Requests a trial sends at most before it gives up on detection. */
    private static final int MAX_REQUESTS = 40;

    private final Launcher launcher;
    private final Path model;
    private final int vocab;
    private final int tokens;
    private final int promptTokens;
    private final PrintWriter out;

    ByzantineBench(Launcher launcher, Path model, int vocab, int tokens, int promptTokens, PrintWriter out) {
        this.launcher = launcher;
        this.model = model;
        this.vocab = vocab;
        this.tokens = tokens;
        this.promptTokens = promptTokens;
        this.out = out;
    }

    /** Runs {@code trials} trials of a worker corrupting {@code fraction} of its outputs; 0 when all pass. */
    int trials(int trials, double fraction, long seed) throws Exception {
        out.printf(Locale.ROOT, "%d trials: worker-0 of 3 flips a bit in %.4f of its outputs; one stage, two spares"
                + " (auditor, referee); every step audited before sampling; %d tokens per request%n", trials, fraction,
                tokens);
        SplittableRandom random = new SplittableRandom(seed);
        int detected = 0;
        int identical = 0;
        List<Long> toDetection = new ArrayList<>();
        for (int i = 1; i <= trials; i++) {
            long trialSeed = random.nextLong();
            UpOptions options = options(1.0, true).withWorkerArgs(List.of(
                    "worker-0:--butterfly.worker.unsafe-fault-injection.enabled=true",
                    "worker-0:--butterfly.worker.unsafe-fault-injection.flip-bit-fraction=" + fraction,
                    "worker-0:--butterfly.worker.unsafe-fault-injection.seed=" + trialSeed));
            try (ExitGuard stop = ExitGuard.arm(launcher::down)) {
                String base = upWithWorker0Computing(options);
                JsonNode roles = state(base);
                String role = strings(roles.path("pipeline")).contains("worker-0") ? "serving"
                        : strings(roles.path("spares")).indexOf("worker-0") == 0 ? "auditing" : "refereeing";
                SplittableRandom prompts = new SplittableRandom(trialSeed);
                List<String> bodies = new ArrayList<>();
                List<List<Long>> served = new ArrayList<>();
                boolean evicted = false;
                String problem = null;
                while (!evicted && bodies.size() < MAX_REQUESTS && problem == null) {
                    String body = body(prompts, bodies.size());
                    bodies.add(body);
                    PlainHttp.Response r = PlainHttp.postJson(base + "/api/v1/inference", body, REQUEST_TIMEOUT);
                    if (r.status() != 200) {
                        problem = "HTTP " + r.status() + " " + r.body();
                    } else {
                        served.add(longs(JSON.readTree(r.body()).path("token_ids")));
                    }
                    evicted = byzantine(state(base), "worker-0");
                }
                if (evicted) {
                    awaitState(base, s -> !strings(s.path("pipeline")).contains("worker-0"));
                }
                int same = 0;
                for (int k = 0; k < served.size() && evicted; k++) {
                    PlainHttp.Response r = PlainHttp.postJson(base + "/api/v1/inference", bodies.get(k), REQUEST_TIMEOUT);
                    same += r.status() == 200 && longs(JSON.readTree(r.body()).path("token_ids")).equals(served.get(k))
                            ? 1 : 0;
                }
                boolean allSame = evicted && problem == null && same == served.size();
                detected += evicted ? 1 : 0;
                if (evicted) {
                    toDetection.add((long) bodies.size());
                }
                identical += allSame ? 1 : 0;
                out.printf(Locale.ROOT, "trial %3d/%d (worker-0 %s): %s after %d request(s); %d/%d identical to the"
                                + " fault-free run%s%n", i, trials, role,
                        evicted ? "worker-0 evicted (Byzantine)" : "NOT detected", bodies.size(), same,
                        served.size(), problem == null ? "" : " (" + problem + ")");
                out.flush();
            } finally {
                launcher.down();
            }
        }
        out.println();
        if (!toDetection.isEmpty()) {
            out.printf(Locale.ROOT, "requests until eviction: min %d, p50 %d, max %d (each %d tokens)%n",
                    Stats.percentile(toDetection, 0), Stats.percentile(toDetection, 50),
                    Stats.percentile(toDetection, 100), tokens);
        }
        out.printf(Locale.ROOT, "detected=%d/%d identical=%d/%d%n", detected, trials, identical, trials);
        return detected == trials && identical == trials ? 0 : 1;
    }

    /**
     * Starts the trial's cluster and waits for its two spares. The workers start together and the first to join
     * serves; the first spare audits every step and the second, the referee, computes only disputed ones: a corrupting
     * worker-0 in the referee's place is never disputed, so never caught (and never heard), and the cluster is started
     * again until worker-0 serves or audits.
     */
    private String upWithWorker0Computing(UpOptions options) throws Exception {
        for (int attempt = 1; ; attempt++) {
            launcher.up(options, new PrintWriter(PrintWriter.nullWriter()));
            String base = launcher.ports().coordinatorUrl();
            awaitState(base, s -> s.path("spares").size() == 2);
            List<String> spares = strings(state(base).path("spares"));
            if (!spares.get(1).equals("worker-0") || attempt == 5) {
                return base;
            }
            out.println("worker-0 drew the referee's place (it computes only disputed steps): starting the cluster again");
            out.flush();
            launcher.down();
        }
    }

    /**
     * Tokens/s and time to first token with audits off, at 10 % beside the stream and at 100 % before sampling; and,
     * from the serving stage's own counters, the share of its step time spent hashing (the phase envelope, which is
     * never off: an audit compares those hashes). The last lines are the figures as {@code key=value}.
     */
    int cost(int requests, long seed) throws Exception {
        out.printf(Locale.ROOT, "audit cost: one stage and two spares, no fault; %d sequential streamed requests of %d"
                + " tokens per setting%n", requests, tokens);
        record Setting(String name, double fraction, boolean before) {
        }
        record Figures(double tokensPerSecond, long ttftP50Ms, long ttftP99Ms, double hashSeconds,
                       double computeSeconds, long tokens, double seconds) {

            /**
             * Tokens/s had the serving stage not hashed: the run's time less its hashing time (the stage hashes on the
             * step's path; the envelope cannot be turned off, so this is the run without that time, not a run).
             */
            double tokensPerSecondWithoutHashing() {
                return tokens / Math.max(1e-9, seconds - hashSeconds);
            }
        }
        List<Setting> settings = List.of(new Setting("audits off", 0, false),
                new Setting("audits 10% beside the stream", 0.1, false),
                new Setting("audits 100% before sampling", 1.0, true));
        List<String> lines = new ArrayList<>();
        List<Figures> figures = new ArrayList<>();
        for (Setting setting : settings) {
            try (ExitGuard stop = ExitGuard.arm(launcher::down)) {
                launcher.up(options(setting.fraction(), setting.before()), new PrintWriter(PrintWriter.nullWriter()));
                String base = launcher.ports().coordinatorUrl();
                awaitState(base, s -> s.path("spares").size() == 2);
                warmUp(base, seed);
                SplittableRandom prompts = new SplittableRandom(seed);
                double[] before = stageSeconds(base);
                List<Long> ttft = new ArrayList<>();
                long generated = 0;
                long began = System.nanoTime();
                for (int k = 0; k < requests; k++) {
                    RequestTiming t = send(base, body(prompts, k));
                    if (t.error() != null) {
                        throw new IllegalStateException(setting.name() + ": " + t.error());
                    }
                    ttft.add(t.ttftNanos() / 1_000_000);
                    generated += t.tokens();
                }
                double seconds = (System.nanoTime() - began) / 1e9;
                double[] after = stageSeconds(base);
                Figures f = new Figures(generated / seconds, Stats.percentile(ttft, 50), Stats.percentile(ttft, 99),
                        after[0] - before[0], after[1] - before[1], generated, seconds);
                figures.add(f);
                String line = String.format(Locale.ROOT, "%-30s %8.2f tokens/s   TTFT p50 %d ms, p99 %d ms   hashing"
                                + " %.2f %% of the serving stage's compute", setting.name(), f.tokensPerSecond(),
                        f.ttftP50Ms(), f.ttftP99Ms(), 100 * share(f.hashSeconds(), f.computeSeconds()));
                out.println(line);
                out.flush();
                lines.add(line);
            } finally {
                launcher.down();
            }
        }
        out.println();
        lines.forEach(out::println);
        Figures off = figures.get(0);
        out.printf(Locale.ROOT, "hashing on %.2f tokens/s, off %.2f tokens/s (the same run less the serving stage's"
                + " %.3f s of hashing)%n", off.tokensPerSecond(), off.tokensPerSecondWithoutHashing(), off.hashSeconds());
        out.printf(Locale.ROOT, "hash_share=%.4f%n", share(off.hashSeconds(), off.computeSeconds()));
        out.printf(Locale.ROOT, "hash_ratio=%.4f%n", off.tokensPerSecond() / off.tokensPerSecondWithoutHashing());
        out.printf(Locale.ROOT, "audit10_ratio=%.2f%n", figures.get(1).tokensPerSecond() / off.tokensPerSecond());
        out.printf(Locale.ROOT, "audit100_ratio=%.2f%n", figures.get(2).tokensPerSecond() / off.tokensPerSecond());
        out.printf(Locale.ROOT, "audit100_ttft_ratio=%.2f%n",
                (double) figures.get(2).ttftP50Ms() / Math.max(1, off.ttftP50Ms()));
        return 0;
    }

    /**
     * Requests (other prompts than the measured ones) until the services' JIT compilers have settled, as {@code bench}
     * warms up ({@link JitSettling}): each setting runs on a fresh cluster, and a cold one serves at about half speed
     * for its first thousands of tokens, which would decide the ratios. At least two requests, at most two minutes.
     */
    private void warmUp(String base, long seed) throws IOException, InterruptedException {
        List<String> services = new ArrayList<>(List.of(base));
        for (int w = 0; w < 3; w++) {
            services.add("http://127.0.0.1:" + launcher.ports().workerHttp(w));
        }
        JitSettling jit = new JitSettling(services);
        jit.skip();
        SplittableRandom others = new SplittableRandom(~seed);
        long cap = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        int rounds = 0;
        while (rounds < 2 || !jit.settled() && System.nanoTime() < cap) {
            send(base, body(others, rounds));
            jit.roundEnded();
            rounds++;
        }
        out.printf(Locale.ROOT, "  warm-up: %d requests, the compilers at %.1f%% of the last rounds' time%n", rounds,
                100 * jit.recentShare());
        out.flush();
    }

    private static double share(double part, double whole) {
        return whole > 0 ? part / whole : 0;
    }

    /** The serving stages' hashing and compute seconds so far, summed ({@code /api/v1/worker/metrics}). */
    private double[] stageSeconds(String base) throws IOException {
        double hash = 0;
        double compute = 0;
        for (String id : strings(state(base).path("pipeline"))) {
            int worker = Integer.parseInt(id.substring(id.lastIndexOf('-') + 1));
            JsonNode m = JSON.readTree(PlainHttp.get("http://127.0.0.1:" + launcher.ports().workerHttp(worker)
                    + "/api/v1/worker/metrics", Duration.ofSeconds(10)).body());
            hash += m.path("hash_seconds_total").asDouble();
            compute += m.path("compute_seconds_total").asDouble();
        }
        return new double[] {hash, compute};
    }

    private UpOptions options(double fraction, boolean beforeSampling) {
        return UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE).withWorkers(1).withSpares(2)
                .withModel(model).withCoordinatorArgs(List.of(
                        "--butterfly.coordinator.audit.fraction=" + fraction,
                        "--butterfly.coordinator.audit.before-sampling=" + beforeSampling));
    }

    private RequestTiming send(String base, String body) {
        long start = System.nanoTime();
        StreamTimer timer = new StreamTimer(start, System::nanoTime);
        try {
            return timer.result(PlainHttp.postForEvents(base + "/api/v1/inference/stream", body, REQUEST_TIMEOUT,
                    timer), tokens);
        } catch (IOException e) {
            return RequestTiming.failed(e.toString());
        }
    }

    /** Alternately greedy and sampled (temperature 0.8, seeded), end of sequence ignored. */
    private String body(SplittableRandom random, int k) {
        StringBuilder b = new StringBuilder("{\"token_ids\": [");
        for (int i = 0; i < promptTokens; i++) {
            b.append(i == 0 ? "" : ", ").append(random.nextInt(3, vocab));
        }
        return b.append("], \"max_tokens\": ").append(tokens).append(", \"ignore_eos\": true, ")
                .append(k % 2 == 0 ? "\"temperature\": 0" : "\"temperature\": 0.8, \"seed\": " + random.nextInt(1 << 20))
                .append('}').toString();
    }

    private static JsonNode state(String base) throws IOException {
        return JSON.readTree(PlainHttp.get(base + "/api/v1/system/state", Duration.ofSeconds(10)).body());
    }

    private static void awaitState(String base, java.util.function.Predicate<JsonNode> done) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
        while (System.nanoTime() < deadline) {
            try {
                JsonNode s = state(base);
                if ("READY".equals(s.path("system_state").asString()) && done.test(s)) {
                    return;
                }
            } catch (IOException e) {
                // not answering yet
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the cluster did not reach the awaited state within 5 minutes");
    }

    private static boolean byzantine(JsonNode s, String id) {
        for (JsonNode n : s.path("nodes")) {
            if (id.equals(n.path("id").asString())) {
                return n.path("byzantine").asBoolean();
            }
        }
        return false;
    }

    private static List<Long> longs(JsonNode array) {
        List<Long> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asLong()));
        return out;
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asString()));
        return out;
    }
}
