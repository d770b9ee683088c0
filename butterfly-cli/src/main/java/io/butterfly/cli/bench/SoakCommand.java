package io.butterfly.cli.bench;

import io.butterfly.cli.cluster.ExitGuard;
import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.faults.ClusterWatch;
import io.butterfly.cli.faults.History;
import io.butterfly.cli.faults.KillNoticed;
import io.butterfly.cli.faults.ScheduleRunner;
import io.butterfly.cli.faults.SteadyLoad;
import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.process.ServiceProcess;
import io.butterfly.cli.process.ServiceSupervisor;
import io.butterfly.cli.process.Signal;
import io.butterfly.common.model.ModelConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import tools.jackson.databind.JsonNode;

/**
 * {@code soak}: a cluster of its own (3 workers and a spare, state directory and port offset +800) under mixed load for
 * {@code --duration}: checked streams (every token the fault-free run's, as {@link SteadyLoad} checks them), chat
 * completions, streams the client closes after a few tokens, long prompts; a random pipeline worker SIGKILLed every
 * {@code --kill-every} and started again. Each service's heap (after a full GC), threads, file descriptors and resident
 * memory, and the control log's size on disk and in entries, are measured after a warm-up and at the end, and printed
 * side by side: what a leak would grow.
 */
@Command(name = "soak", description = "mixed load (streams, chat, cancellations, long prompts) for --duration with a"
        + " worker SIGKILLed every --kill-every: heap, threads, fds and control log at the start and the end")
public final class SoakCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--duration", paramLabel = "D", description = "how long the load runs: 90s, 20m, 1h (default 1h)")
    String duration = "1h";

    @Option(names = "--kill-every", paramLabel = "D", description = "a pipeline worker SIGKILLed this often (default 4m)")
    String killEvery = "4m";

    @Option(names = "--clients", paramLabel = "N", description = "clients of checked streams (default 2)")
    int clients = 2;

    @Option(names = "--mixed-clients", paramLabel = "N", description = "clients of chat, cancelled streams and long"
            + " prompts (default 3)")
    int mixedClients = 3;

    @Option(names = "--coordinators", paramLabel = "N", description = "coordinator replicas, 1-3 (default 1)")
    int coordinators = 1;

    @Option(names = "--model", paramLabel = "DIR", description = "default: the generated demo model (6 layers, width 256)")
    Path model;

    @Option(names = "--seed", paramLabel = "S", description = "seed of the requests and the victims (default 0)")
    long seed;

    @Option(names = "--end-by", paramLabel = "HH:MM", description = "stop the load at this time of day (UTC) if --duration"
            + " has not run out by then, so that the end figures are still taken (default: none)")
    String endBy;

    @Override
    public Integer call() throws Exception {
        Duration total = duration(duration, "--duration");
        Duration every = duration(killEvery, "--kill-every");
        if (clients < 1 || mixedClients < 0 || coordinators < 1 || coordinators > 3 || every.toSeconds() < 10) {
            throw Commands.usageError(spec, "--clients >= 1, --mixed-clients >= 0, --coordinators 1-3, --kill-every >= 10s");
        }
        java.time.Instant deadline = endBy == null ? null : endBy(endBy, java.time.Instant.now());
        PrintWriter out = spec.commandLine().getOut();
        ButterflyHome home = ButterflyHome.fromEnvironment();
        Path dir = model != null ? model.toAbsolutePath() : DemoModel.ensure(home, out, spec.commandLine().getErr());
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        ButterflyHome soakHome = home.withState(home.state().resolve("soak"));
        Launcher launcher = new Launcher(soakHome, PortLayout.withOffset(PortLayout.fromEnvironment().offset() + 800));
        ServiceSupervisor supervisor = launcher.supervisor();
        if (launcher.running()) {
            launcher.down();
        }
        try (ExitGuard stop = ExitGuard.arm(launcher::down)) {
            launcher.up(UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE).withWorkers(3).withSpares(1)
                    .withModel(dir).withCoordinators(coordinators), out);
            List<String> replicas = role(supervisor, "coordinator").stream().map(p -> "http://127.0.0.1:" + p.httpPort()).toList();
            Set<String> workers = role(supervisor, "worker").stream().map(ServiceProcess::nodeId).collect(Collectors.toSet());
            if (awaitReady(replicas, workers, Duration.ofMinutes(5)) < 0) {
                // went on regardless (the load still means something), but every READY wait below will run out too
                out.println("  not READY with every worker " + workers + " within 5 minutes of the start");
            }
            List<SteadyLoad.Request> requests = ScheduleRunner.references(replicas.get(0),
                    ScheduleRunner.bodies(seed, 8, config.vocabSize(), 32, 32));
            History history = new History();
            Duration warmUp = Duration.ofSeconds(Math.min(60, Math.max(5, total.toSeconds() / 10)));
            out.printf(Locale.ROOT, "soak for %s (measured after a %d s warm-up and at the end), a pipeline worker killed every"
                    + " %s; %d checked stream clients, %d mixed clients; %s%n", total, warmUp.toSeconds(), every, clients,
                    mixedClients, dir.getFileName());
            out.flush();
            long started = System.nanoTime();
            Map<String, Vitals> atStart;
            Map<String, Long> logAtStart;
            Map<String, Vitals> atEnd;
            Map<String, Long> logAtEnd;
            List<KillTimes> kills = new java.util.ArrayList<>();
            try (SteadyLoad streams = new SteadyLoad(requests, () -> replicas, history, Duration.ofSeconds(90)).start(clients, seed);
                 MixedLoad mixed = new MixedLoad(replicas.get(0), modelId(replicas.get(0)), config.vocabSize(), 400)
                         .start(mixedClients, seed)) {
                Thread.sleep(warmUp.toMillis());
                atStart = vitals(supervisor);
                logAtStart = controlLog(soakHome, supervisor, replicas);
                print(out, "start", atStart, logAtStart);
                SplittableRandom random = new SplittableRandom(seed);
                long end = started + total.toNanos();
                if (deadline != null) {
                    end = Math.min(end, System.nanoTime() + Duration.between(java.time.Instant.now(), deadline).toNanos());
                }
                long nextKill = System.nanoTime() + every.toNanos();
                while (System.nanoTime() < end) {
                    Thread.sleep(Math.max(1, Math.min(end, nextKill) - System.nanoTime()) / 1_000_000);
                    if (System.nanoTime() >= nextKill && System.nanoTime() < end) {
                        kills.add(killOne(supervisor, replicas, workers, random, out));
                        nextKill = System.nanoTime() + every.toNanos();
                    }
                }
                out.printf(Locale.ROOT, "load stopped after %.1f min; mixed outcomes %s%n", (System.nanoTime() - started) / 6e10,
                        mixed.outcomes());
            }
            awaitReady(replicas, workers, Duration.ofMinutes(5));
            atEnd = vitals(supervisor);
            logAtEnd = controlLog(soakHome, supervisor, replicas);
            print(out, "end", atEnd, logAtEnd);
            long wrong = history.count(History.Outcome.WRONG_TOKENS) + history.count(History.Outcome.UNCLEAR);
            history.wrongOutcomes().forEach(w -> out.println("  WRONG: " + w));
            out.printf(Locale.ROOT, "checked streams %d: %d completed, %d failed clearly, %d wrong; kills=%d, noticed after"
                            + " each kill: %s s, READY after each kill: %s s (-1: not within the bound)%n", history.requests(),
                    history.count(History.Outcome.COMPLETED), history.count(History.Outcome.FAILED_CLEARLY), wrong,
                    kills.size(), seconds(kills.stream().map(KillTimes::noticedMs).toList()),
                    seconds(kills.stream().map(KillTimes::readyMs).toList()));
            for (String name : atStart.keySet()) {
                Vitals a = atStart.get(name);
                Vitals b = atEnd.get(name);
                if (b != null) {
                    out.printf(Locale.ROOT, "%-14s heap_mb %.1f -> %.1f, threads %d -> %d, fds %d -> %d, rss_mb %d -> %d%n", name,
                            a.heapMb(), b.heapMb(), a.threads(), b.threads(), a.fds(), b.fds(), a.rssMb(), b.rssMb());
                }
            }
            logAtStart.forEach((k, v) -> out.printf(Locale.ROOT, "%-34s %d -> %d%n", k, v, logAtEnd.getOrDefault(k, -1L)));
            return wrong == 0 ? 0 : 1;
        } finally {
            launcher.down();
        }
    }

    /** How long the coordinator may take to notice a kill before the READY wait goes on regardless. */
    static final Duration NOTICE_WITHIN = Duration.ofMinutes(2);

    /**
     * After one kill: when the coordinator was first seen to notice it (ms after the SIGKILL, -1 if not within {@link
     * #NOTICE_WITHIN}), and when it was READY with the worker back after that (ms after the SIGKILL, -1 if not within 5
     * minutes after that, its new process joined and held neither SUSPECT nor FAILED).
     */
    record KillTimes(long noticedMs, long readyMs) {
    }

    /**
     * SIGKILLs a random worker of the pipeline and starts it again; waits for the coordinator to notice (see {@link
     * KillNoticed}), then for READY with it back: a READY wait that started before the kill was noticed would end at
     * once, on the state from before the kill.
     */
    private static KillTimes killOne(ServiceSupervisor supervisor, List<String> replicas, Set<String> workers,
                                     SplittableRandom random, PrintWriter out) throws InterruptedException {
        JsonNode before = ClusterWatch.state(replicas.get(0));
        List<String> pipeline = new java.util.ArrayList<>();
        if (before != null) {
            before.path("pipeline").forEach(n -> pipeline.add(n.asString()));
        }
        if (pipeline.isEmpty()) {
            out.println("  no pipeline to kill a worker of");
            return new KillTimes(-1, -1);
        }
        String node = pipeline.get(random.nextInt(pipeline.size()));
        ServiceProcess victim = role(supervisor, "worker").stream().filter(p -> p.nodeId().equals(node)).findFirst().orElseThrow();
        long t0 = System.nanoTime();
        supervisor.signal(victim, Signal.KILL);
        supervisor.awaitExit(victim, Duration.ofSeconds(30));
        supervisor.restart(victim.name());
        String seen = null;
        while (seen == null && System.nanoTime() - t0 < NOTICE_WITHIN.toNanos()) {
            seen = KillNoticed.seen(before, ClusterWatch.state(replicas.get(0)), node);
            if (seen == null) {
                Thread.sleep(200);
            }
        }
        long noticedMs = seen == null ? -1 : (System.nanoTime() - t0) / 1_000_000;
        if (seen == null) {
            out.printf(Locale.ROOT, "  killed %s (%s): the coordinator did not show it noticed within %d s (still READY,"
                    + " same epoch, the worker in the pipeline and not failed); READY below is timed from the kill all"
                    + " the same%n", victim.name(), node, NOTICE_WITHIN.toSeconds());
        } else {
            out.printf(Locale.ROOT, "  killed %s (%s): noticed after %.1f s (%s)%n", victim.name(), node, noticedMs / 1e3, seen);
        }
        // READY, and the worker back: its new process joined, and the coordinator holds it neither SUSPECT nor
        // FAILED (between the two the state is READY with the dead worker still in the pipeline).
        String victimUrl = "http://127.0.0.1:" + victim.httpPort() + "/api/v1/worker/state";
        long readyMs = -1;
        String why = null;
        while (System.nanoTime() - t0 < NOTICE_WITHIN.toNanos() + Duration.ofMinutes(5).toNanos()) {
            why = ClusterWatch.notReady(replicas, workers);
            if (why == null) {
                why = KillNoticed.notBack(ClusterWatch.state(replicas.get(0)), json(victimUrl), node);
            }
            if (why == null) {
                readyMs = (System.nanoTime() - t0) / 1_000_000;
                break;
            }
            Thread.sleep(200);
        }
        String because = why;
        out.printf(Locale.ROOT, "  killed %s (%s): READY with it back after %s%n", victim.name(), node,
                readyMs < 0 ? "more than 5 min (" + because + ")" : String.format(Locale.ROOT, "%.1f s", readyMs / 1e3));
        out.flush();
        return new KillTimes(noticedMs, readyMs);
    }

    /** A JSON answer of {@code url}, or null while it does not give one. */
    private static JsonNode json(String url) {
        try {
            io.butterfly.cli.http.PlainHttp.Response r = io.butterfly.cli.http.PlainHttp.get(url, Duration.ofSeconds(2));
            return r.status() == 200 ? tools.jackson.databind.json.JsonMapper.builder().build().readTree(r.body()) : null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static List<String> seconds(List<Long> ms) {
        return ms.stream().map(m -> m < 0 ? "-1" : String.format(Locale.ROOT, "%.1f", m / 1e3)).toList();
    }

    /** The served model's id, as the coordinator reports it. */
    private static String modelId(String base) {
        JsonNode s = ClusterWatch.state(base);
        return s == null ? "" : s.path("model_id").asString();
    }

    private static Map<String, Vitals> vitals(ServiceSupervisor supervisor) {
        Map<String, Vitals> out = new LinkedHashMap<>();
        for (ServiceProcess p : supervisor.listed()) {
            out.put(p.name(), Vitals.of(p.pid(), p.httpPort()));
        }
        return out;
    }

    /** Each coordinator's control log: bytes of its Raft directory on disk, and the entries its log holds. */
    private static Map<String, Long> controlLog(ButterflyHome home, ServiceSupervisor supervisor, List<String> replicas) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (ServiceProcess p : role(supervisor, "coordinator")) {
            out.put(p.name() + " control_log_bytes", bytes(home.data(p.name()).resolve("raft")));
            JsonNode s = ClusterWatch.state("http://127.0.0.1:" + p.httpPort());
            if (s != null) {
                JsonNode raft = s.path("raft");
                long start = raft.path("log_start_index").asLong(-1);
                out.put(p.name() + " control_log_entries", start < 0 ? 0 : raft.path("last_applied_index").asLong() - start + 1);
                out.put(p.name() + " last_applied_index", raft.path("last_applied_index").asLong());
            }
        }
        return out;
    }

    private static long bytes(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(f -> {
                try {
                    return Files.size(f);
                } catch (IOException e) {
                    return 0; // rotated away meanwhile
                }
            }).sum();
        } catch (IOException | java.io.UncheckedIOException e) {
            return -1;
        }
    }

    private static void print(PrintWriter out, String when, Map<String, Vitals> vitals, Map<String, Long> log) {
        vitals.forEach((name, v) -> out.printf(Locale.ROOT, "%s %-14s %s%n", when, name, v.describe()));
        log.forEach((k, v) -> out.printf(Locale.ROOT, "%s %s %d%n", when, k, v));
        out.flush();
    }

    /** How long until READY with every worker back, in ms; -1 if not within {@code timeout}. */
    private static long awaitReady(List<String> replicas, Set<String> workers, Duration timeout) throws InterruptedException {
        long t0 = System.nanoTime();
        while (System.nanoTime() - t0 < timeout.toNanos()) {
            if (ClusterWatch.ready(replicas, workers)) {
                return (System.nanoTime() - t0) / 1_000_000;
            }
            Thread.sleep(200);
        }
        return -1;
    }

    private static List<ServiceProcess> role(ServiceSupervisor supervisor, String role) {
        return supervisor.listed().stream().filter(p -> role.equals(p.role())).toList();
    }

    /** Today's (UTC) {@code HH:MM} after {@code now}; a usage error if it is not a time of day or has passed. */
    private java.time.Instant endBy(String text, java.time.Instant now) {
        java.time.LocalTime time;
        try {
            time = java.time.LocalTime.parse(text);
        } catch (java.time.format.DateTimeParseException e) {
            throw Commands.usageError(spec, "--end-by must be a time of day in UTC (17:50), not '" + text + "'");
        }
        java.time.Instant at = now.atZone(java.time.ZoneOffset.UTC).toLocalDate().atTime(time).toInstant(java.time.ZoneOffset.UTC);
        if (!at.isAfter(now)) {
            throw Commands.usageError(spec, "--end-by " + text + " UTC has passed");
        }
        return at;
    }

    private Duration duration(String text, String option) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("([1-9][0-9]{0,5})(s|m|h)").matcher(text);
        if (!m.matches()) {
            throw Commands.usageError(spec, option + " must be a number and s, m or h (90s, 20m, 1h), not '" + text + "'");
        }
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            default -> Duration.ofHours(n);
        };
    }
}
