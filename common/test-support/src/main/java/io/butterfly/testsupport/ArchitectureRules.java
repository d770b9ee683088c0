package io.butterfly.testsupport;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.methods;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaMethod;
import com.tngtech.archunit.core.domain.JavaParameterizedType;
import com.tngtech.archunit.core.domain.JavaType;
import com.tngtech.archunit.core.domain.JavaWildcardType;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The layering rules every service's architecture test applies to its own packages (docs/architecture.md,
 * "Layering"). A service names its packages relative to its root ({@code "cluster"}, {@code "api"}); each rule
 * covers the package and everything under it.
 */
public final class ArchitectureRules {

    /** Frameworks and transports: what a pure package must not touch. */
    public static final String[] SPRING = {"org.springframework..", "jakarta..", "io.micrometer.."};
    public static final String[] GRPC = {"io.grpc..", "com.google.rpc.."};
    public static final String[] PROTO = {"io.butterfly.proto..", "com.google.protobuf.."};
    public static final String[] RATIS = {"org.apache.ratis.."};
    public static final String[] DJL = {"ai.djl.."};
    public static final String[] HAZELCAST = {"com.hazelcast.."};
    /** Butterfly's own gRPC support (channels, streams, transfers, the discovery client): transport too. */
    public static final String[] GRPC_SUPPORT = {"io.butterfly.common.grpc..", "io.butterfly.common.transfer..",
            "io.butterfly.common.discovery.."};

    private ArchitectureRules() {
    }

    /** The production classes under {@code root} (no tests). */
    public static JavaClasses productionClasses(String root) {
        return new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages(root);
    }

    /** No cycles between the packages right under {@code root} (each with its subpackages). */
    public static ArchRule noPackageCycles(String root) {
        return slices().matching(root + ".(*)..").should().beFreeOfCycles()
                .because("packages that depend on each other cannot be understood, tested or moved apart");
    }

    /** Pure packages: the domain, apart from frameworks, transports and engines. */
    public static ArchRule pure(String root, String... packages) {
        return noClasses().that().resideInAnyPackage(under(root, packages))
                .should().dependOnClassesThat().resideInAnyPackage(concat(SPRING, GRPC, GRPC_SUPPORT, PROTO, RATIS, DJL, HAZELCAST))
                .because("the domain is plain Java: frameworks, transports, Raft and the engine stay at its edges");
    }

    /** {@code library} (package patterns) used only in {@code allowed} (packages under {@code root}). */
    public static ArchRule onlyIn(String what, String[] library, String root, String... allowed) {
        return noClasses().that().resideInAPackage(root + "..").and().resideOutsideOfPackages(under(root, allowed))
                .should().dependOnClassesThat().resideInAnyPackage(library)
                .because(what + " belongs in " + String.join(", ", allowed) + " only");
    }

    /** Nothing in {@code packages} depends on config/: config wires the parts from the settings, they get plain values. */
    public static ArchRule independentOfConfig(String root, String... packages) {
        return noClasses().that().resideInAnyPackage(under(root, packages))
                .should().dependOnClassesThat().resideInAPackage(root + ".config..")
                .because("config/ wires the service and may depend on everything; the parts are given plain settings");
    }

    /**
     * Spring (and jakarta) only in {@code allowed} and the application class at the root: everything else is plain
     * classes that config/ wires with @Bean methods, not annotated components.
     */
    public static ArchRule springOnlyIn(String root, String... allowed) {
        return noClasses().that().resideInAPackage(root + "..").and().resideOutsideOfPackage(root)
                .and().resideOutsideOfPackages(under(root, allowed))
                .should().dependOnClassesThat().resideInAnyPackage(SPRING)
                .because("the domain, the engines and the gateways are wired in config/ with @Bean, not annotated");
    }

    /** gRPC and generated protos only in the transport edges ({@code api} and the gateways to other services). */
    public static ArchRule transportOnlyIn(String root, String... allowed) {
        return onlyIn("gRPC and the generated protos", concat(GRPC, PROTO), root, allowed);
    }

    static String[] under(String root, String... packages) {
        return Arrays.stream(packages).map(p -> root + "." + p + "..").toArray(String[]::new);
    }

    static String[] concat(String[]... groups) {
        return Stream.of(groups).flatMap(Arrays::stream).toArray(String[]::new);
    }

    /**
     * The public methods of the REST controllers under {@code root} answer records, not maps (nor lists or futures of
     * maps): a JSON answer's fields are named once, in the record the server, the CLI and the tests share
     * ({@code io.butterfly.common.api}). Nor an answer whose type says nothing ({@code Object},
     * {@code ResponseEntity<?>}), which could hide a map from this rule: a refusal is an exception the problem handler
     * turns into its problem, not a second body type.
     */
    public static ArchRule restControllersAnswerRecords(String root) {
        return restControllersAnswerRecords(root, Set.of());
    }

    /**
     * As {@link #restControllersAnswerRecords(String)}, but the methods named in {@code eitherKind}
     * ({@code owner.method}, each with its reason where the test names it) may answer a type that names nothing: one
     * path answering a stream or a record, as the body asks (OpenAI's {@code stream}). A Map is refused there too.
     */
    public static ArchRule restControllersAnswerRecords(String root, Set<String> eitherKind) {
        return methods().that().areDeclaredInClassesThat().resideInAPackage(root + "..")
                .and().areDeclaredInClassesThat()
                .areAnnotatedWith("org.springframework.web.bind.annotation.RestController")
                .and().arePublic()
                .should(new ArchCondition<JavaMethod>("answer records, not maps") {
                    @Override
                    public void check(JavaMethod method, ConditionEvents events) {
                        if (mentionsMap(method.getReturnType())) {
                            events.add(SimpleConditionEvent.violated(method, method.getFullName()
                                    + " answers a Map: answer a record of io.butterfly.common.api"));
                        } else if (hidesItsType(method.getReturnType())
                                && !eitherKind.contains(method.getOwner().getName() + "." + method.getName())) {
                            events.add(SimpleConditionEvent.violated(method, method.getFullName()
                                    + " answers " + method.getReturnType().getName() + ", which names no type: answer"
                                    + " a record of io.butterfly.common.api, and refuse by an exception"));
                        }
                    }
                })
                .allowEmptyShould(true);
    }

    private static boolean mentionsMap(JavaType type) {
        return type.toErasure().isAssignableTo(Map.class) || type instanceof JavaParameterizedType p
                && p.getActualTypeArguments().stream().anyMatch(ArchitectureRules::mentionsMap);
    }

    /** {@code Object}, or a wildcard ({@code ?}, {@code ? extends Object}), anywhere in the type. */
    private static boolean hidesItsType(JavaType type) {
        if (type instanceof JavaWildcardType w) {
            return w.getUpperBounds().stream().allMatch(b -> b.toErasure().isEquivalentTo(Object.class));
        }
        return type.toErasure().isEquivalentTo(Object.class) || type instanceof JavaParameterizedType p
                && p.getActualTypeArguments().stream().anyMatch(ArchitectureRules::hidesItsType);
    }

    /**
     * Threads are made daemons in one place, {@code io.butterfly.common.concurrent.DaemonThreads} (named, started,
     * or a factory for a pool), not by hand in each class.
     */
    public static ArchRule daemonThreadsOnlyFromDaemonThreads(String root) {
        return noClasses().that().resideInAPackage(root + "..")
                .and().doNotHaveFullyQualifiedName("io.butterfly.common.concurrent.DaemonThreads")
                .should().callMethod(Thread.class, "setDaemon", boolean.class)
                .because("background threads are made one way, by DaemonThreads, with a name that says what they do");
    }
}
