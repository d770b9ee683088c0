package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.faults.Fault;
import io.butterfly.cli.faults.FaultInjector;
import io.butterfly.cli.faults.FaultKind;
import io.butterfly.cli.faults.FaultSchedule;
import io.butterfly.cli.faults.RaftLogs;
import io.butterfly.cli.faults.ScheduleRunner;
import io.butterfly.cli.faults.SteadyLoad;
import io.butterfly.cli.faults.Verdict;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.raft.ControlReplica;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Faults by schedule, as Jepsen's and etcd's robustness tests inject them, against three coordinator replicas and four
 * workers (three stages and a spare) in one JVM under a steady streamed load: seeded schedules of kills (and restarts),
 * pauses, partitions (a service cut off the others' gRPC) and clock skews (a coordinator's or discovery's wall clock
 * stepped). After each schedule the checker ({@link ScheduleRunner}) finds nothing acknowledged lost (every task start
 * a client saw is known to every replica; no replica behind an epoch reported before), no wrong token (every request
 * completed with the fault-free run's tokens or failed with a reason), no split brain (one leader per term as the
 * replicas claimed it, and the replicas' committed Raft logs, read from each replica, agree on every index's term),
 * and the cluster READY again. What the harness cannot do: pauses and partitions hold gRPC, not Raft between the
 * coordinators (loopback sockets), so a coordinator's Raft is faulted only by kills. {@code ./butterfly
 * fault-schedule} runs schedules against processes (SIGKILL, SIGSTOP).
 */
class FaultScheduleIT {

    private static final Logger log = LoggerFactory.getLogger(FaultScheduleIT.class);
    private static final List<String> REPLICAS = List.of("coordinator", "coordinator-1", "coordinator-2");
    private static final List<String> WORKERS = List.of("worker-0", "worker-1", "worker-2", "worker-3");
    /**
     * The default suite's schedules (five faults each, every kind between them): 29, a partition, a clock skew, a
     * worker paused and then killed (it comes back as a spare) and a coordinator killed; 25, two coordinators killed one
     * after the other, then a clock skew, a pause and a partition. More with {@code -Dfault-schedule.seeds=1,2,3,...}
     * (the process run, {@code ./butterfly fault-schedule}, is the long one).
     */
    private static final long[] SEEDS = java.util.Arrays.stream(System.getProperty("fault-schedule.seeds", "29,25")
            .split(",")).map(String::trim).mapToLong(Long::parseLong).toArray();

    @TempDir
    Path work;

    @Test
    void seededSchedulesOfKillsPausesPartitionsAndClockSkewsLoseNothingAndGiveNoWrongToken() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            cluster.expectCoordinatorGroup(REPLICAS.size());
            for (int i = 0; i < WORKERS.size(); i++) {
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            // The recovery timeout bounds the READY wait: a stream whose coordinator was killed between committing
            // its task's start and sending its first token leaves its client no event id to resume with, so the
            // task stays paused (a fault's pause, to the checker) until the timeout fails it. With 2 minutes,
            // schedule 25 was READY only 112-119 s after its last fault; 20 s still outlasts a re-plan and a
            // coordinator's restart here, and a task that does not make it fails with a reason, as it may.
            cluster.startCoordinatorGroup("tiny-llama", 3, 3, "--butterfly.coordinator.engine.recovery-timeout=20s");
            List<String> urls = REPLICAS.stream().map(cluster::urlOf).toList();
            Set<String> workerIds = Set.copyOf(WORKERS);
            long start = System.nanoTime();
            while (!io.butterfly.cli.faults.ClusterWatch.ready(urls, workerIds)) {
                cluster.checkNoServiceDied();
                assertThat(System.nanoTime() - start).as("READY in time\n" + cluster.diagnostics())
                        .isLessThan(Duration.ofMinutes(5).toNanos());
                Thread.sleep(200);
            }
            List<SteadyLoad.Request> requests = ScheduleRunner.references(urls.get(0),
                    ScheduleRunner.bodies(7, 6, 512, 12, 16));

            Map<String, Object> kinds = new ConcurrentHashMap<>();
            FaultInjector injector = new FaultInjector() {
                @Override
                public void inject(Fault f) {
                    kinds.put(f.kind().name(), true);
                    switch (f.kind()) {
                        case KILL -> cluster.kill(f.target());
                        case PAUSE -> cluster.pause(f.target());
                        case PARTITION -> cluster.isolate(f.target());
                        case CLOCK_SKEW -> cluster.skewClock(f.target(), Duration.ofMillis(f.skewMs()));
                    }
                }

                @Override
                public void end(Fault f) {
                    switch (f.kind()) {
                        case KILL -> cluster.restart(f.target());
                        case PAUSE -> cluster.resume(f.target());
                        case PARTITION -> cluster.heal(f.target());
                        case CLOCK_SKEW -> cluster.skewClock(f.target(), Duration.ZERO);
                    }
                }
            };
            ScheduleRunner.LogCheck logs = () -> {
                Map<String, NavigableMap<Long, Long>> committed = new LinkedHashMap<>();
                for (String r : REPLICAS) {
                    committed.put(r, cluster.bean(r, ControlReplica.class).committedTerms());
                }
                assertThat(RaftLogs.entries(committed)).as("the committed logs read").isPositive();
                return RaftLogs.disagreements(committed);
            };
            ScheduleRunner runner = new ScheduleRunner(() -> urls, workerIds, requests, 3, Duration.ofMinutes(2), log::info);
            FaultSchedule.Settings settings = new FaultSchedule.Settings(5, List.of(FaultKind.values()),
                    concat(REPLICAS, WORKERS), Duration.ofMillis(300), Duration.ofMillis(1000), Duration.ofMillis(500),
                    Duration.ofMillis(1500), Duration.ofSeconds(30), List.of("coordinator", "coordinator-1", "coordinator-2",
                    "discovery"));
            Verdict total = Verdict.none();
            for (long seed : SEEDS) {
                FaultSchedule schedule = FaultSchedule.generate(seed, settings);
                log.info("schedule {}: {}", seed, schedule.faults());
                Verdict v = runner.run(schedule, injector, logs);
                assertThat(v.completed()).as("requests completed through schedule " + seed).isPositive();
                total = total.plus(v);
            }
            log.info(total.line());
            assertThat(total.lost()).as(total.line()).isZero();
            assertThat(total.wrongTokens()).as(total.line()).isZero();
            assertThat(total.splitBrain()).as(total.line()).isZero();
            assertThat(total.readyAfterMs()).as("READY after every schedule: " + total.line()).hasSize(SEEDS.length);
            assertThat(kinds.keySet()).as("every kind of fault was injected").hasSize(FaultKind.values().length);
        }
    }

    private static List<String> concat(List<String> a, List<String> b) {
        return java.util.stream.Stream.concat(a.stream(), b.stream()).toList();
    }
}
