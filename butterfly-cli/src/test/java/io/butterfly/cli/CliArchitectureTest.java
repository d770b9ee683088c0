package io.butterfly.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;

import com.tngtech.archunit.core.domain.JavaClasses;
import io.butterfly.testsupport.ArchitectureRules;
import org.junit.jupiter.api.Test;

/**
 * The tools' layering: packages without cycles; the process supervisor (which the integration tests start their
 * services with) on the JDK alone, so they need none of the tools; DJL only where the model runs in this process.
 */
class CliArchitectureTest {

    private static final String ROOT = "io.butterfly.cli";
    private static final JavaClasses CLASSES = ArchitectureRules.productionClasses(ROOT);

    @Test
    void noPackageCycles() {
        ArchitectureRules.noPackageCycles(ROOT).check(CLASSES);
    }

    @Test
    void theSupervisorNeedsOnlyTheJdk() {
        classes().that().resideInAPackage(ROOT + ".process..")
                .should().onlyDependOnClassesThat().resideInAnyPackage(ROOT + ".process..", "java..")
                .because("the integration tests start their services with it and need nothing else of the tools")
                .check(CLASSES);
    }

    @Test
    void djlOnlyWhereTheModelRunsInThisProcess() {
        ArchitectureRules.onlyIn("DJL", ArchitectureRules.DJL, ROOT, "reference").check(CLASSES);
    }

    /** Daemon threads are made in one place, {@code DaemonThreads}. */
    @Test
    void daemonThreadsOnlyFromDaemonThreads() {
        ArchitectureRules.daemonThreadsOnlyFromDaemonThreads(ROOT).check(CLASSES);
    }
}
