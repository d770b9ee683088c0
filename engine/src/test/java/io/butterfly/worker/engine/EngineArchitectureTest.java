package io.butterfly.worker.engine;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noFields;

import com.tngtech.archunit.core.domain.JavaClasses;
import io.butterfly.testsupport.ArchitectureRules;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The engine is a library of forward passes (DJL, TorchScript, the native kernels) that the worker service, the
 * tools and the tests share: no framework, transport or consensus, so none of them comes with it.
 */
class EngineArchitectureTest {

    private static final String ROOT = "io.butterfly.worker.engine";
    private static final JavaClasses ENGINE = ArchitectureRules.productionClasses(ROOT);

    @Test
    void theEngineImportsNoSpringGrpcOrRatis() {
        String[] forbidden = Stream.of(ArchitectureRules.SPRING, ArchitectureRules.GRPC, ArchitectureRules.PROTO,
                ArchitectureRules.RATIS).flatMap(Stream::of).toArray(String[]::new);
        noClasses().should().dependOnClassesThat().resideInAnyPackage(forbidden)
                .because("the engine is a library: the worker service wires it to Spring and gRPC, not the reverse")
                .check(ENGINE);
    }

    @Test
    void noEngineThreadIsTheProcesss() {
        noFields().that().haveRawType(EngineThread.class).should().beStatic()
                .because("each worker owns its engine thread (a bean of its context), so the workers of one process"
                        + " never queue behind each other's steps")
                .check(ENGINE);
    }

    @Test
    void packagesHaveNoCycles() {
        ArchitectureRules.noPackageCycles(ROOT).check(ENGINE);
    }

    /** Daemon threads are made in one place, {@code DaemonThreads}. */
    @Test
    void daemonThreadsOnlyFromDaemonThreads() {
        ArchitectureRules.daemonThreadsOnlyFromDaemonThreads(ROOT).check(ENGINE);
    }
}
