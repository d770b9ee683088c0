package io.butterfly.worker;

import com.tngtech.archunit.core.domain.JavaClasses;
import io.butterfly.testsupport.ArchitectureRules;
import org.junit.jupiter.api.Test;

/**
 * The worker's layering: a domain (partition, pipeline, capability, cluster) of plain Java; the engine, the only
 * place DJL is; api/ for what comes in and gateway/ for what goes out, the only places gRPC and the protos are;
 * config/ wiring it all, which nothing depends on.
 */
class WorkerArchitectureTest {

    private static final String ROOT = "io.butterfly.worker";
    private static final JavaClasses WORKER = ArchitectureRules.productionClasses(ROOT);

    @Test
    void packagesHaveNoCycles() {
        ArchitectureRules.noPackageCycles(ROOT).check(WORKER);
    }

    @Test
    void theDomainIsPlainJava() {
        ArchitectureRules.pure(ROOT, "partition", "pipeline", "capability", "cluster").check(WORKER);
    }

    @Test
    void djlOnlyInTheEngine() {
        ArchitectureRules.onlyIn("DJL", ArchitectureRules.DJL, ROOT, "engine").check(WORKER);
    }

    @Test
    void grpcAndProtosOnlyInApiAndGateways() {
        ArchitectureRules.transportOnlyIn(ROOT, "api", "gateway").check(WORKER);
    }

    @Test
    void springOnlyInApiAndConfig() {
        ArchitectureRules.springOnlyIn(ROOT, "api", "config").check(WORKER);
    }

    @Test
    void nothingDependsOnConfig() {
        ArchitectureRules.independentOfConfig(ROOT, "api", "gateway", "engine", "partition", "pipeline", "capability",
                "cluster").check(WORKER);
    }

    /** REST answers are records shared with the CLI and the tests, not maps. */
    @Test
    void restControllersAnswerRecords() {
        ArchitectureRules.restControllersAnswerRecords(ROOT).check(WORKER);
    }

    /** Daemon threads are made in one place, {@code DaemonThreads}. */
    @Test
    void daemonThreadsOnlyFromDaemonThreads() {
        ArchitectureRules.daemonThreadsOnlyFromDaemonThreads(ROOT).check(WORKER);
    }
}
