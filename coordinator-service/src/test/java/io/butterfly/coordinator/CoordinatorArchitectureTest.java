package io.butterfly.coordinator;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noMethods;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.lang.ArchCondition;
import io.butterfly.common.fs.DurableFiles;
import java.nio.file.Files;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import io.butterfly.testsupport.ArchitectureRules;
import org.junit.jupiter.api.Test;

/**
 * The coordinator's layering, checked on its production classes: plain-Java domain packages; Raft, the tokenizer
 * library, the Jinja engine, gRPC and the generated messages each confined to the package that adapts them; no package
 * cycles.
 */
class CoordinatorArchitectureTest {

    private static final String ROOT = "io.butterfly.coordinator";
    private static final JavaClasses CLASSES = ArchitectureRules.productionClasses(ROOT);

    /** State, reducer, planners, policies and the orchestration that uses them. */
    private static final String[] DOMAIN = {"cluster", "statemachine", "planning", "liveness", "integrity",
            "invariants", "inference", "reconcile", "control", "model", "chat", "jobs"};

    @Test
    void noPackageCycles() {
        ArchitectureRules.noPackageCycles(ROOT).check(CLASSES);
    }

    @Test
    void theDomainIsPlainJava() {
        ArchitectureRules.pure(ROOT, DOMAIN).check(CLASSES);
    }

    @Test
    void theDomainTakesItsSettingsRatherThanTheConfiguration() {
        ArchitectureRules.independentOfConfig(ROOT, DOMAIN).check(CLASSES);
    }

    @Test
    void springOnlyInApiAndConfig() {
        ArchitectureRules.springOnlyIn(ROOT, "api", "config").check(CLASSES);
    }

    @Test
    void ratisOnlyInRaft() {
        ArchitectureRules.onlyIn("Ratis", ArchitectureRules.RATIS, ROOT, "raft").check(CLASSES);
    }

    @Test
    void djlOnlyInTheTokenizerAdapter() {
        ArchitectureRules.onlyIn("DJL", ArchitectureRules.DJL, ROOT, "tokenizer").check(CLASSES);
    }

    @Test
    void jinjavaOnlyInTheChatTemplateAdapter() {
        ArchitectureRules.onlyIn("Jinjava", new String[]{"com.hubspot.jinjava..", "jinjava.."}, ROOT, "jinja")
                .check(CLASSES);
    }

    /** raft/ may use the generated messages only to encode its own log entries. */
    @Test
    void grpcAndGeneratedMessagesOnlyInTheApiTheGatewaysAndTheLogCodec() {
        ArchitectureRules.transportOnlyIn(ROOT, "api", "gateway", "raft").check(CLASSES);
        ArchitectureRules.onlyIn("gRPC", ArchitectureRules.GRPC, ROOT, "api", "gateway").check(CLASSES);
        ArchitectureRules.onlyIn("Butterfly's gRPC support (channels, streams, transfers, discovery client)",
                ArchitectureRules.GRPC_SUPPORT, ROOT, "api", "gateway").check(CLASSES);
        noClasses().that().resideInAPackage(ROOT + ".raft..").should().dependOnClassesThat()
                .resideInAnyPackage("io.butterfly.proto.worker..", "io.butterfly.proto.registry..",
                        "io.butterfly.proto.discovery..")
                .because("raft/ encodes the control log's own entries, not other services' messages").check(CLASSES);
    }

    /**
     * The engine core (its loop, the scheduler, each sequence's state, the pipeline port) is plain Java that knows its
     * ports only: no Spring, gRPC or Ratis, and none of the control log, the replicated state, the journal, the request
     * processor or the output processor around it, which reach it by its messages and its {@code SequenceOutputs}.
     */
    @Test
    void theEngineCoreKnowsOnlyItsPorts() {
        String[] outside = Stream.of(ArchitectureRules.SPRING, ArchitectureRules.GRPC, ArchitectureRules.PROTO,
                ArchitectureRules.RATIS, new String[]{ROOT + ".control..", ROOT + ".raft..", ROOT + ".api..",
                        ROOT + ".config..", ROOT + ".gateway..", ROOT + ".model..", ROOT + ".reconcile..",
                        ROOT + ".inference"}).flatMap(Stream::of).toArray(String[]::new);
        noClasses().that().resideInAPackage(ROOT + ".inference.engine..").should().dependOnClassesThat()
                .resideInAnyPackage(outside)
                .because("the engine core owns the requests' state and takes everything else as messages and ports")
                .check(CLASSES);
    }

    /**
     * Issue 47, "a snapshot rename without a directory fsync": a file renamed into place is directory data, forgotten
     * by a power cut unless its directory is forced too. Every class that renames files (the control state's snapshot
     * above all, which Ratis purges the log behind) forces the directory after it ({@code DurableFiles.syncDirectory}),
     * or leaves the whole write to {@code DurableFiles.write}. Before 2ab61de the snapshot was renamed unsynced, which
     * this refuses; the JOBS datasets' store renamed files the control log then names unsynced too (now DurableFiles).
     */
    @Test
    void aSnapshotRenameIsFollowedByADirectoryFsync() {
        classes().that().resideInAPackage(ROOT + "..").and(aClassCalling(Files.class, "move"))
                .should(ArchCondition.from(aClassCalling(DurableFiles.class, "syncDirectory")))
                .because("a rename a power cut forgets loses what the control log already names (issue 47)")
                .check(CLASSES);
    }

    /**
     * Issue 47, "no sleeping request threads": the API and the inference path wait on futures and the engine's
     * events, never in {@code sleep} (a request thread asleep is a thread a flood takes away from everyone, and a
     * latency no client asked for). The one sleep left is the shutdown's wait for open streams to leave
     * ({@code destroy}), which no request runs.
     */
    @Test
    void noSleepingRequestThreads() {
        DescribedPredicate<JavaCodeUnit> sleeps = calling(Thread.class, "sleep").or(calling(TimeUnit.class, "sleep"));
        noMethods().that().areDeclaredInClassesThat().resideInAnyPackage(ROOT + ".api..", ROOT + ".inference..")
                .and().doNotHaveName("destroy")
                .should(ArchCondition.from(sleeps))
                .because("request threads wait on futures and events, not in sleep (issue 47)").check(CLASSES);
    }

    /** A method or constructor that calls {@code owner}'s methods named {@code name}, whatever their parameters. */
    private static DescribedPredicate<JavaCodeUnit> calling(Class<?> owner, String name) {
        return DescribedPredicate.describe("call " + owner.getSimpleName() + "." + name, unit -> unit.getMethodCallsFromSelf()
                .stream().anyMatch(c -> c.getTargetOwner().isEquivalentTo(owner) && c.getName().equals(name)));
    }

    private static DescribedPredicate<JavaClass> aClassCalling(Class<?> owner, String name) {
        DescribedPredicate<JavaCodeUnit> calls = calling(owner, name);
        return DescribedPredicate.describe("call " + owner.getSimpleName() + "." + name,
                c -> c.getCodeUnits().stream().anyMatch(calls));
    }

    /**
     * REST answers are records shared with the CLI and the tests, not maps. Justified exceptions to "a type that names
     * nothing": OpenAI's two generation paths answer, on one path as OpenAI defines it, either an event stream (an
     * {@code SseEmitter}) or a record of {@code common.api} ({@code OpenAiCompletion}, {@code OpenAiChatCompletion}),
     * by the body's {@code stream} field, so their future's type is {@code ?}; neither answers a Map.
     */
    @Test
    void restControllersAnswerRecords() {
        ArchitectureRules.restControllersAnswerRecords(ROOT, java.util.Set.of(
                ROOT + ".api.openai.CompletionsController.complete",
                ROOT + ".api.openai.ChatCompletionsController.chat")).check(CLASSES);
    }

    /** Daemon threads are made in one place, {@code DaemonThreads}. */
    @Test
    void daemonThreadsOnlyFromDaemonThreads() {
        ArchitectureRules.daemonThreadsOnlyFromDaemonThreads(ROOT).check(CLASSES);
    }
}
