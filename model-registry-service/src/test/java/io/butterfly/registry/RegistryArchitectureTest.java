package io.butterfly.registry;

import com.tngtech.archunit.core.domain.JavaClasses;
import io.butterfly.testsupport.ArchitectureRules;
import org.junit.jupiter.api.Test;

/**
 * The registry's layering: the catalog and the store are plain Java; api/ (gRPC and REST) is the only place gRPC
 * and the protos are; config/ wires it all, and nothing depends on it.
 */
class RegistryArchitectureTest {

    private static final String ROOT = "io.butterfly.registry";
    private static final JavaClasses REGISTRY = ArchitectureRules.productionClasses(ROOT);

    @Test
    void packagesHaveNoCycles() {
        ArchitectureRules.noPackageCycles(ROOT).check(REGISTRY);
    }

    @Test
    void catalogAndStoreArePlainJava() {
        ArchitectureRules.pure(ROOT, "catalog", "store").check(REGISTRY);
    }

    @Test
    void grpcAndProtosOnlyInApi() {
        ArchitectureRules.transportOnlyIn(ROOT, "api").check(REGISTRY);
    }

    @Test
    void springOnlyInApiAndConfig() {
        ArchitectureRules.springOnlyIn(ROOT, "api", "config").check(REGISTRY);
    }

    @Test
    void nothingDependsOnConfig() {
        ArchitectureRules.independentOfConfig(ROOT, "api", "catalog", "store").check(REGISTRY);
    }

    /** REST answers are records shared with the CLI and the tests, not maps. */
    @Test
    void restControllersAnswerRecords() {
        ArchitectureRules.restControllersAnswerRecords(ROOT).check(REGISTRY);
    }

    /** Daemon threads are made in one place, {@code DaemonThreads}. */
    @Test
    void daemonThreadsOnlyFromDaemonThreads() {
        ArchitectureRules.daemonThreadsOnlyFromDaemonThreads(ROOT).check(REGISTRY);
    }
}
