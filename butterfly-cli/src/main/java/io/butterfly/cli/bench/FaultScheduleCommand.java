package io.butterfly.cli.bench;

import io.butterfly.cli.cluster.ExitGuard;
import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.faults.ClusterWatch;
import io.butterfly.cli.faults.Fault;
import io.butterfly.cli.faults.FaultInjector;
import io.butterfly.cli.faults.FaultKind;
import io.butterfly.cli.faults.FaultSchedule;
import io.butterfly.cli.faults.ScheduleRunner;
import io.butterfly.cli.faults.SteadyLoad;
import io.butterfly.cli.faults.Verdict;
import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.process.ServiceProcess;
import io.butterfly.cli.process.ServiceSupervisor;
import io.butterfly.cli.process.Signal;
import io.butterfly.common.model.ModelConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code fault-schedule}: seeded schedules of process faults (SIGKILL and a restart, SIGSTOP and SIGCONT) against a
 * cluster of its own (3 coordinator replicas, 3 workers and a spare; state directory and port offset +700) under a
 * steady streamed load, each checked as {@link ScheduleRunner} says: nothing acknowledged lost, no wrong token, one
 * leader per term, READY again. Partitions and clock skews need the network and clocks of one JVM (the integration
 * test {@code FaultScheduleIT}); between processes this command does kills and pauses. The last line is
 * {@code schedules=.. faults=.. lost=0 wrong_tokens=0 split_brain=0 ready_after_last_fault_s_p50=.. p99=..}.
 */
@Command(name = "fault-schedule", description = "seeded schedules of SIGKILLs and SIGSTOPs against 3 coordinators and 4"
        + " workers under load: lost, wrong_tokens, split_brain, time to READY after the last fault")
public final class FaultScheduleCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--schedules", paramLabel = "N", description = "schedules, 1-1000 (default 5)")
    int schedules = 5;

    @Option(names = "--faults", paramLabel = "N", description = "faults per schedule, 1-100 (default 4)")
    int faults = 4;

    @Option(names = "--seed", paramLabel = "S", description = "seed of the first schedule, the next ones S+1, ... (default 0)")
    long seed;

    @Option(names = "--clients", paramLabel = "N", description = "concurrent streaming clients (default 3)")
    int clients = 3;

    @Option(names = "--tokens", paramLabel = "N", description = "tokens per request (default 24)")
    int tokens = 24;

    @Option(names = "--model", paramLabel = "DIR", description = "default: the generated demo model (6 layers, width 256)")
    Path model;

    @Override
    public Integer call() throws Exception {
        if (schedules < 1 || schedules > 1000 || faults < 1 || faults > 100 || clients < 1 || clients > 64 || tokens < 2) {
            throw Commands.usageError(spec, "--schedules 1-1000, --faults 1-100, --clients 1-64, --tokens >= 2");
        }
        PrintWriter out = spec.commandLine().getOut();
        ButterflyHome home = ButterflyHome.fromEnvironment();
        Path dir = model != null ? model.toAbsolutePath() : DemoModel.ensure(home, out, spec.commandLine().getErr());
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        Launcher launcher = new Launcher(home.withState(home.state().resolve("fault-schedule")),
                PortLayout.withOffset(PortLayout.fromEnvironment().offset() + 700));
        ServiceSupervisor supervisor = launcher.supervisor();
        if (launcher.running()) {
            launcher.down();
        }
        try (ExitGuard stop = ExitGuard.arm(launcher::down)) {
            launcher.up(UpOptions.defaults().withApiKeys(UpOptions.ApiKeyFiles.NONE).withWorkers(3).withSpares(1)
                    .withModel(dir).withCoordinators(3), out);
            List<String> replicas = processes(supervisor, "coordinator").stream()
                    .map(p -> "http://127.0.0.1:" + p.httpPort()).toList();
            Set<String> workers = processes(supervisor, "worker").stream().map(ServiceProcess::nodeId)
                    .collect(Collectors.toSet());
            List<String> targets = supervisor.listed().stream()
                    .filter(p -> p.role().equals("coordinator") || p.role().equals("worker")).map(ServiceProcess::name).toList();
            awaitReady(replicas, workers);
            List<SteadyLoad.Request> requests = ScheduleRunner.references(replicas.get(0),
                    ScheduleRunner.bodies(seed, 8, config.vocabSize(), 24, tokens));
            out.printf("%d coordinators, %d workers (%s); %d schedules of %d faults (kill, pause) over %s; %d streaming clients%n",
                    replicas.size(), workers.size(), dir.getFileName(), schedules, faults, targets, clients);
            out.flush();
            ScheduleRunner runner = new ScheduleRunner(() -> replicas, workers, requests, clients, Duration.ofMinutes(5),
                    line -> {
                        out.println(line);
                        out.flush();
                    });
            FaultSchedule.Settings settings = new FaultSchedule.Settings(faults, List.of(FaultKind.KILL, FaultKind.PAUSE),
                    targets, Duration.ofSeconds(1), Duration.ofSeconds(5), Duration.ofSeconds(1), Duration.ofSeconds(6),
                    Duration.ZERO, List.of());
            FaultInjector injector = new ProcessFaults(supervisor);
            Verdict total = Verdict.none();
            for (int s = 0; s < schedules; s++) {
                FaultSchedule schedule = FaultSchedule.generate(seed + s, settings);
                out.printf("schedule %d/%d (seed %d)%n", s + 1, schedules, seed + s);
                out.flush();
                total = total.plus(runner.run(schedule, injector, List::of));
            }
            out.println(total.line());
            return total.clean() ? 0 : 1;
        } finally {
            launcher.down();
        }
    }

    /** Faults as signals to the cluster's processes; a killed one is started again as the same node. */
    private record ProcessFaults(ServiceSupervisor supervisor) implements FaultInjector {
        @Override
        public void inject(Fault f) {
            ServiceProcess p = supervisor.listed(f.target()).orElseThrow();
            switch (f.kind()) {
                case KILL -> supervisor.signal(p, Signal.KILL);
                case PAUSE -> supervisor.signal(p, Signal.STOP);
                default -> throw new IllegalArgumentException(f.kind() + " is not done to processes");
            }
        }

        @Override
        public void end(Fault f) {
            ServiceProcess p = supervisor.listed(f.target()).orElseThrow();
            switch (f.kind()) {
                case KILL -> {
                    supervisor.awaitExit(p, Duration.ofSeconds(30));
                    supervisor.restart(f.target());
                }
                case PAUSE -> supervisor.signal(p, Signal.CONT);
                default -> throw new IllegalArgumentException(f.kind() + " is not done to processes");
            }
        }
    }

    private static void awaitReady(List<String> replicas, Set<String> workers) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
        while (!ClusterWatch.ready(replicas, workers)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the cluster is not READY within 5 minutes");
            }
            Thread.sleep(200);
        }
    }

    private static List<ServiceProcess> processes(ServiceSupervisor supervisor, String role) {
        return supervisor.listed().stream().filter(p -> role.equals(p.role())).toList();
    }
}
