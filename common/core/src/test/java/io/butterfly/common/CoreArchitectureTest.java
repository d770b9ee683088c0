package io.butterfly.common;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/** The core library is what every module, tools included, may use: plain Java over the protocol's messages. */
class CoreArchitectureTest {

    private static final JavaClasses CORE = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages("io.butterfly.common");

    @Test
    void coreUsesNoFrameworkTransportOrEngine() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("org.springframework..", "jakarta..",
                        "io.grpc..", "org.apache.catalina..", "org.apache.tomcat..", "ai.djl..", "org.apache.ratis..",
                        "com.hazelcast..", "io.github.resilience4j..")
                .because("the core is a library of formats and rules; transports and frameworks use it, not the reverse")
                .check(CORE);
    }

    @Test
    void corePackagesHaveNoCycles() {
        slices().matching("io.butterfly.common.(*)..").should().beFreeOfCycles().check(CORE);
    }
}
