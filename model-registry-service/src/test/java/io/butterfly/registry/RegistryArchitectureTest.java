package io.butterfly.registry;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

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
    void nothingDependsOnConfig() {
        noClasses().that().resideOutsideOfPackage(ROOT + ".config..")
                .should().dependOnClassesThat().resideInAPackage(ROOT + ".config..")
                .because("config/ wires the registry from its settings; the parts get plain values")
                .check(REGISTRY);
    }
}
