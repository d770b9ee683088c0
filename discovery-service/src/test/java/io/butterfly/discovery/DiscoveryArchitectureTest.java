package io.butterfly.discovery;

import static io.butterfly.testsupport.ArchitectureRules.HAZELCAST;

import com.tngtech.archunit.core.domain.JavaClasses;
import io.butterfly.testsupport.ArchitectureRules;
import org.junit.jupiter.api.Test;

/**
 * Discovery's layering (docs/architecture.md): admission and membership are plain Java over domain records;
 * the gRPC and REST edges (api/) read the wire; Hazelcast and Consul sit in their adapters.
 */
class DiscoveryArchitectureTest {

    private static final String ROOT = "io.butterfly.discovery";
    private static final JavaClasses CLASSES = ArchitectureRules.productionClasses(ROOT);

    @Test
    void packagesHaveNoCycles() {
        ArchitectureRules.noPackageCycles(ROOT).check(CLASSES);
    }

    @Test
    void admissionAndMembershipArePure() {
        ArchitectureRules.pure(ROOT, "admission", "membership").check(CLASSES);
    }

    @Test
    void grpcAndProtosOnlyAtTheEdge() {
        ArchitectureRules.transportOnlyIn(ROOT, "api").check(CLASSES);
    }

    @Test
    void hazelcastOnlyInItsAdapterAndConfiguration() {
        ArchitectureRules.onlyIn("Hazelcast", HAZELCAST, ROOT, "hazelcast", "config").check(CLASSES);
    }

    @Test
    void springOnlyInApiConfigAndTheConsulAdapter() {
        ArchitectureRules.springOnlyIn(ROOT, "api", "config", "consul").check(CLASSES);
    }

    @Test
    void nothingDependsOnConfig() {
        ArchitectureRules.independentOfConfig(ROOT, "api", "admission", "membership", "hazelcast", "consul")
                .check(CLASSES);
    }

    /** REST answers are records shared with the CLI and the tests, not maps. */
    @Test
    void restControllersAnswerRecords() {
        ArchitectureRules.restControllersAnswerRecords(ROOT).check(CLASSES);
    }

    /** Daemon threads are made in one place, {@code DaemonThreads}. */
    @Test
    void daemonThreadsOnlyFromDaemonThreads() {
        ArchitectureRules.daemonThreadsOnlyFromDaemonThreads(ROOT).check(CLASSES);
    }
}
