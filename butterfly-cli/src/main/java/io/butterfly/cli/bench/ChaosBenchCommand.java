package io.butterfly.cli.bench;

import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.cluster.ExitGuard;
import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.http.PlainHttp;
import io.butterfly.cli.http.ResumableStream;
import io.butterfly.cli.process.ServiceProcess;
import io.butterfly.cli.process.ServiceSupervisor;
import io.butterfly.cli.process.Signal;
import io.butterfly.common.model.ModelConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code bench-chaos}: streamed generations that lose a process half-way, compared with the same requests run without
 * a failure.
 *
 * <p>It starts a cluster of its own (state directory and port offset +600). Each trial runs a streamed generation of
 * {@code --tokens} tokens after a seeded prompt of token ids, alternately greedy and sampled at temperature 0.8 with
 * a seed, first without a failure (the reference), then again while a process is SIGKILLed at a random token: a random
 * worker of the pipeline ({@code --kill worker}), or the coordinator replica serving the stream
 * ({@code --kill coordinator}, with {@code --coordinators 3}), whose client then resumes the stream at another replica
 * with {@code Last-Event-ID} as {@code ./butterfly generate --stream} does. A killed worker's stage is planned away
 * (onto the spare, {@code --spares}, or the survivors), and the worker is started again as the same node, which comes
 * back as the next spare; a killed coordinator rejoins its group. A trial is identical when the
 * stream gave every token once, in order, and they are the reference's; its stall is the longest gap between two
 * tokens. The last lines are {@code identical=K/N} and the stall's min/p50/p99.
 */
@Command(name = "bench-chaos", description = "streamed generations that lose a worker or their coordinator at a random"
        + " token: identical=K/N to fault-free runs, stall min/p50/p99")
public final class ChaosBenchCommand implements Callable<Integer> {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Duration READY_TIMEOUT = Duration.ofMinutes(5);
    private static final long WORKER_STALL_TARGET_MS = 5_000;

    @Spec
    CommandSpec spec;

    @Option(names = "--trials", paramLabel = "N", description = "trials, 1-1000 (default 50)")
    int trials = 50;

    @Option(names = "--kill", paramLabel = "worker|coordinator", description = "what is killed (default worker)")
    String kill = "worker";

    @Option(names = "--workers", paramLabel = "N", description = "workers, 2-99 (default 3)")
    int workers = 3;

    @Option(names = "--spares", paramLabel = "N", description = "standby workers beyond --workers, 0-9 (default 1):"
            + " one takes the stage of the killed worker")
    int spares = 1;

    @Option(names = "--coordinators", paramLabel = "N", description = "coordinator replicas, 1-3 (default 1; 3 with"
            + " --kill coordinator)")
    Integer coordinators;

    @Option(names = "--model", paramLabel = "DIR", description = "default: the generated bench-100m model (~100M parameters)")
    Path model;

    @Option(names = "--tokens", paramLabel = "N", description = "tokens generated per request, 2-1024 (default 64)")
    int tokens = 64;

    @Option(names = "--prompt-tokens", paramLabel = "N", description = "prompt length in tokens (default 32)")
    int promptTokens = 32;

    @Option(names = "--seed", paramLabel = "S", description = "seed of the prompts, kill points and victims (default 0)")
    long seed;

    @Option(names = "--byzantine", description = "trials of a worker that flips a bit in --corrupt-fraction of its"
            + " outputs, every step audited (docs/verified-execution.md): detected=K/N, identical=K/N")
    boolean byzantine;

    @Option(names = "--corrupt-fraction", paramLabel = "F", description = "with --byzantine: the fraction of its outputs"
            + " the worker corrupts (default 0.02: 1 in 50)")
    double corruptFraction = 0.02;

    @Option(names = "--audit-cost", description = "tokens/s and time to first token with audits off, 10% and 100%,"
            + " in one run (--trials requests each)")
    boolean auditCost;

    private PrintWriter out;
    private Launcher launcher;
    private ServiceSupervisor supervisor;
    /**
     * The worker the last trial killed, which the next trial waits to see back as a spare: killed at its last token, its
     * loss may not even be detected when that trial ends, and a cluster that still looks READY with its old spare
     * would lose the next stage with no spare to take it (the survivors would, and every later trial would run on
     * fewer, larger stages than the bench says).
     */
    private String rejoining;

    /** One trial's outcome: whether it matched the reference (and why not), and its longest gap between tokens. */
    private record Trial(boolean identical, String why, long stallMs) {
    }

    @Override
    public Integer call() throws Exception {
        boolean killCoordinator = switch (kill) {
            case "worker" -> false;
            case "coordinator" -> true;
            default -> throw Commands.usageError(spec, "--kill must be worker or coordinator, got '" + kill + "'");
        };
        if (byzantine || auditCost) {
            return audits();
        }
        int replicas = coordinators != null ? coordinators : killCoordinator ? 3 : 1;
        if (trials < 1 || trials > 1000 || workers < 2 || workers > 99 || replicas < 1 || replicas > 3 || tokens < 2
                || tokens > 1024 || promptTokens < 1 || spares < 0 || spares > 9 || workers + spares > 99) {
            throw Commands.usageError(spec, "--trials 1-1000, --workers 2-99, --spares 0-9, --coordinators 1-3,"
                    + " --tokens 2-1024 and --prompt-tokens >= 1");
        }
        if (killCoordinator && replicas < 3) {
            throw Commands.usageError(spec, "--kill coordinator needs --coordinators 3 (a group of 3 outlives one)");
        }
        out = spec.commandLine().getOut();
        ButterflyHome home = ButterflyHome.fromEnvironment();
        Path dir = BenchCommand.model(model, home, out, spec.commandLine().getErr());
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        launcher = new Launcher(home.withState(home.state().resolve("bench-chaos")),
                PortLayout.withOffset(PortLayout.fromEnvironment().offset() + 600));
        supervisor = launcher.supervisor();
        out.printf("model %s: %,d parameters; %d workers, %d spare(s), %d coordinator(s); %d trials, %d tokens each after %d prompt"
                        + " tokens, alternately greedy and sampled (temperature 0.8); killing %s at a random token%n",
                dir.getFileName(), config.parameterCount(), workers, spares, replicas, trials, tokens, promptTokens,
                killCoordinator ? "the coordinator serving the stream" : "a random worker of the pipeline");
        if (launcher.running()) { // left by a run that was killed: this state directory is the bench's own
            launcher.down();
        }
        try (ExitGuard stop = ExitGuard.arm(launcher::down)) {
            launcher.up(UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE).withWorkers(workers).withSpares(spares).withModel(dir)
                    .withCoordinators(replicas), out);
            SplittableRandom random = new SplittableRandom(seed);
            List<Long> stalls = new ArrayList<>();
            int identical = 0;
            for (int i = 1; i <= trials; i++) {
                Trial t = trial(i, random, config.vocabSize(), killCoordinator);
                identical += t.identical() ? 1 : 0;
                if (t.stallMs() >= 0) {
                    stalls.add(t.stallMs());
                }
            }
            out.println();
            out.printf(Locale.ROOT, "identical=%d/%d%n", identical, trials);
            out.printf(Locale.ROOT, "stall (longest gap between two tokens): min %.2f s, p50 %.2f s, p99 %.2f s%n",
                    Stats.percentile(stalls, 0) / 1e3, Stats.percentile(stalls, 50) / 1e3,
                    Stats.percentile(stalls, 99) / 1e3);
            boolean allIdentical = identical == trials;
            boolean stallMet = killCoordinator || Stats.percentile(stalls, 99) <= WORKER_STALL_TARGET_MS;
            out.println("targets: " + trials + "/" + trials + " identical " + (allIdentical ? "met" : "NOT met")
                    + (killCoordinator ? "" : "; stall p99 <= 5 s " + (stallMet ? "met" : "NOT met")));
            return allIdentical ? 0 : 1;
        } finally {
            launcher.down();
        }
    }

    /**
     * {@code --byzantine} or {@code --audit-cost} ({@link ByzantineBench}): clusters of one stage and two spares, by
     * default on the small demo model (the figures are about detection and the audits' relative cost).
     */
    private Integer audits() throws Exception {
        if (trials < 1 || trials > 1000 || tokens < 2 || tokens > 1024 || promptTokens < 1
                || !(corruptFraction > 0 && corruptFraction <= 1)) {
            throw Commands.usageError(spec, "--trials 1-1000, --tokens 2-1024, --prompt-tokens >= 1 and"
                    + " --corrupt-fraction in (0, 1]");
        }
        out = spec.commandLine().getOut();
        ButterflyHome home = ButterflyHome.fromEnvironment();
        Path dir = model != null ? model.toAbsolutePath() : DemoModel.ensure(home, out, spec.commandLine().getErr());
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        Launcher audits = new Launcher(home.withState(home.state().resolve("bench-chaos")),
                PortLayout.withOffset(PortLayout.fromEnvironment().offset() + 600));
        if (audits.running()) {
            audits.down();
        }
        ByzantineBench bench = new ByzantineBench(audits, dir, config.vocabSize(), tokens, promptTokens, out);
        return byzantine ? bench.trials(trials, corruptFraction, seed) : bench.cost(trials, seed);
    }

    private Trial trial(int i, SplittableRandom random, int vocab, boolean killCoordinator) throws Exception {
        long[] prompt = random.longs(promptTokens, 3, vocab).toArray();
        boolean sampled = i % 2 == 0;
        String body = body(prompt, sampled, random.nextLong());
        int killAt = 1 + random.nextInt(tokens - 1);
        awaitReady();
        List<ServiceProcess> coordinatorProcesses = processes("coordinator");
        ServiceProcess serving = coordinatorProcesses.get(killCoordinator ? random.nextInt(coordinatorProcesses.size()) : 0);
        String base = url(serving);

        PlainHttp.Response ref = PlainHttp.postJson(base + "/api/v1/inference", body, Duration.ofMinutes(10));
        if (ref.status() != 200) {
            return report(i, sampled, "-", killAt, new Trial(false, "the reference failed: HTTP " + ref.status() + " "
                    + ref.body(), -1));
        }
        List<Long> reference = longs(JSON.readTree(ref.body()).path("token_ids"));

        ServiceProcess victim = killCoordinator ? serving : pipelineWorker(base, random);
        List<String> urls = ResumableStream.at(base, coordinatorProcesses.stream().filter(p -> p != serving)
                .map(ChaosBenchCommand::url).toList(), "/api/v1/inference/stream");
        Stream stream = new Stream(killAt, victim);
        Trial t;
        try {
            new ResumableStream(urls, Duration.ofMinutes(5), Duration.ofMinutes(5), notice -> { })
                    .post(body, stream::onEvent);
            t = stream.judge(reference);
        } catch (IOException e) {
            t = new Trial(false, "the stream failed: " + e.getMessage(), stream.stallMs());
        }
        if (stream.killed) {
            supervisor.awaitExit(victim, Duration.ofSeconds(30));
            supervisor.restart(victim.name()); // a worker comes back as a spare; a coordinator rejoins the group
            rejoining = killCoordinator ? null : victim.nodeId();
        }
        return report(i, sampled, victim.name(), killAt, t);
    }

    private Trial report(int i, boolean sampled, String victim, int killAt, Trial t) {
        out.printf(Locale.ROOT, "trial %3d/%d %-7s killed %-13s at token %2d: %s, stall %.2f s%n", i, trials,
                sampled ? "sampled" : "greedy", victim, killAt, t.identical() ? "identical" : "DIFFERENT (" + t.why() + ")",
                t.stallMs() / 1e3);
        out.flush();
        return t;
    }

    /** One trial's stream: each token's index and arrival, the kill at its token, the done event's tokens. */
    private final class Stream {
        private final int killAt;
        private final ServiceProcess victim;
        private final List<Long> told = new ArrayList<>();
        private final List<Long> arrivals = new ArrayList<>();
        private String problem;
        private List<Long> done;
        boolean killed;

        Stream(int killAt, ServiceProcess victim) {
            this.killAt = killAt;
            this.victim = victim;
        }

        void onEvent(String name, String data) {
            JsonNode event = JSON.readTree(data);
            switch (name) {
                case "token" -> {
                    arrivals.add(System.nanoTime());
                    if (event.path("index").asInt() != told.size()) {
                        problem = problem != null ? problem : "token " + event.path("index").asInt() + " came as event "
                                + told.size();
                    }
                    told.add(event.path("token_id").asLong());
                    if (told.size() == killAt + 1 && !killed) {
                        killed = supervisor.signal(victim, Signal.KILL);
                    }
                }
                case "done" -> done = longs(event.path("token_ids"));
                case "error" -> problem = "error event " + data;
                default -> { }
            }
        }

        Trial judge(List<Long> reference) {
            String why = problem != null ? problem
                    : done == null ? "no done event"
                    : !done.equals(told) ? "the done event's tokens differ from the streamed ones"
                    : !told.equals(reference) ? "first difference at token " + firstDifference(told, reference)
                    : !killed ? "the kill did not happen" : null;
            return new Trial(why == null, why, stallMs());
        }

        long stallMs() {
            long longest = 0;
            for (int k = 1; k < arrivals.size(); k++) {
                longest = Math.max(longest, arrivals.get(k) - arrivals.get(k - 1));
            }
            return longest / 1_000_000;
        }
    }

    private static int firstDifference(List<Long> a, List<Long> b) {
        int k = 0;
        while (k < Math.min(a.size(), b.size()) && a.get(k).equals(b.get(k))) {
            k++;
        }
        return k;
    }

    private String body(long[] prompt, boolean sampled, long sampleSeed) {
        return "{\"token_ids\": " + Arrays.stream(prompt).mapToObj(Long::toString).collect(Collectors.joining(", ", "[", "]"))
                + ", \"max_tokens\": " + tokens + ", \"ignore_eos\": true, "
                + (sampled ? "\"temperature\": 0.8, \"seed\": " + sampleSeed : "\"temperature\": 0") + "}";
    }

    /** A random worker of the pipeline as the coordinator at {@code base} reports it. */
    private ServiceProcess pipelineWorker(String base, SplittableRandom random) throws IOException {
        JsonNode pipeline = JSON.readTree(PlainHttp.get(base + "/api/v1/system/state", Duration.ofSeconds(10)).body())
                .path("pipeline");
        String node = pipeline.get(random.nextInt(pipeline.size())).asString();
        return processes("worker").stream().filter(p -> p.nodeId().equals(node)).findFirst()
                .orElseThrow(() -> new IllegalStateException("no worker process runs node " + node));
    }

    /**
     * Every coordinator answers READY, knows its leader and runs no paused task, and every spare is back: among them the
     * worker the last trial killed, restarted.
     */
    private void awaitReady() throws InterruptedException {
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            boolean all = true;
            for (ServiceProcess c : processes("coordinator")) {
                JsonNode s = state(c);
                all &= s != null && "READY".equals(s.path("system_state").asString())
                        && s.path("raft").path("leader_id").isString() && s.path("paused_tasks").isEmpty()
                        && s.path("spares").size() == spares
                        && (rejoining == null || strings(s.path("spares")).contains(rejoining));
            }
            if (all) {
                return;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the cluster is not READY within " + READY_TIMEOUT);
    }

    private static JsonNode state(ServiceProcess p) {
        try {
            PlainHttp.Response r = PlainHttp.get(url(p) + "/api/v1/system/state", Duration.ofSeconds(2));
            return r.status() == 200 ? JSON.readTree(r.body()) : null;
        } catch (IOException e) {
            return null;
        }
    }

    private List<ServiceProcess> processes(String role) {
        return supervisor.listed().stream().filter(p -> role.equals(p.role())).toList();
    }

    private static String url(ServiceProcess p) {
        return "http://127.0.0.1:" + p.httpPort();
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
