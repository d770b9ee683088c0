package io.butterfly.coordinator.reconcile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.manifest.ManifestVerifier;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.control.LeadershipEvents;
import io.butterfly.coordinator.integrity.PartitionReport;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ModelRegistry;
import io.butterfly.coordinator.model.Tokenizer;
import io.butterfly.coordinator.planning.CapacityWeightedPlanner;
import io.butterfly.coordinator.planning.ModelFootprints;
import io.butterfly.coordinator.statemachine.SystemState;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The control loop carrying out what the reconciler decides, with its threads: a signed model from a registry in
 * memory, workers that take their assignments and report their loads into an in-memory control log, and leadership
 * that changes under it. Bootstrap to READY with validated weights, a leader change mid-bootstrap, a lost stage
 * re-planned onto the spare, drains, and a replica that does not lead doing nothing.
 */
class ControlLoopTest {

    private static final ModelConfig CONFIG = new ModelConfig(Architecture.LLAMA, 6, 16, 2, 1, 32, 300, 64, 1e-5,
            10000.0, false, 1, 2);
    private static final String SELF = "coordinator-0";

    @TempDir
    Path tmp;

    private final LeadershipEvents leadership = new LeadershipEvents(SELF);
    private final InMemoryControlLog control = new InMemoryControlLog(leadership);
    private final FakeWorkers workers = new FakeWorkers();
    private final List<NodeInfo> members = new CopyOnWriteArrayList<>();
    private Manifest manifest;
    private ModelCatalog catalog;
    private ControlLoop loop;

    /**
     * Workers that take assignments (unless down) and load at once, report what their stage holds, and leave
     * discovery when dismissed.
     */
    private final class FakeWorkers implements Workers {
        final List<String> calls = new CopyOnWriteArrayList<>();
        final Map<String, Assignment> held = new ConcurrentHashMap<>();
        final Set<String> down = ConcurrentHashMap.newKeySet();

        @Override
        public void assign(NodeInfo worker, Assignment a, Duration deadline) {
            if (down.contains(worker.nodeId())) {
                throw new WorkerCallFailedException(worker.nodeId() + " is down", null);
            }
            calls.add(worker.nodeId() + " epoch " + a.epoch() + " term " + a.term() + " since " + a.keptSinceEpoch());
            held.put(worker.nodeId(), a);
            control.submit(new ClusterCommand.LoadCompleted(worker.nodeId(), a.epoch(), "c", System.currentTimeMillis()));
        }

        @Override
        public void reconnect(NodeInfo worker) {
        }

        @Override
        public PartitionReport checksums(NodeInfo worker, long epoch, Duration deadline) {
            Assignment a = held.get(worker.nodeId());
            List<PartitionReport.FileDigest> files = manifest.files().stream()
                    .filter(f -> f.neededBy(a.layerStart(), a.layerEnd(), a.hasEmbedding(), a.hasHead()))
                    .map(f -> new PartitionReport.FileDigest(f.name(), f.checksum())).toList();
            return new PartitionReport(worker.nodeId(), a.layerStart(), a.layerEnd(),
                    MerkleTree.rootHex(files.stream().map(PartitionReport.FileDigest::sha256).toList()), files);
        }

        @Override
        public void announceValidation(NodeInfo worker, WeightValidation validation, Duration deadline) {
        }

        @Override
        public void dismiss(NodeInfo worker, long epoch, long term, Duration deadline) {
            calls.add(worker.nodeId() + " dismissed");
            members.removeIf(m -> m.nodeId().equals(worker.nodeId())); // it leaves discovery
        }
    }

    @BeforeEach
    void start() throws IOException {
        Path published = Files.createDirectories(tmp.resolve("published"));
        ModelGenerator.generate(CONFIG, 5, published);
        NodeIdentity publisher = NodeIdentity.ephemeral();
        manifest = ManifestVerifier.sign(manifest(published), publisher);
        ModelRegistry registry = new ModelRegistry() {
            @Override
            public Manifest manifest(String modelId) {
                return manifest;
            }

            @Override
            public void download(Manifest m, List<String> files, Path dir) throws IOException {
                Files.createDirectories(dir);
                for (String f : files) {
                    Files.copy(published.resolve(f), dir.resolve(f), StandardCopyOption.REPLACE_EXISTING);
                }
            }
        };
        Tokenizer.Loader tokenizers = new Tokenizer.Loader() {
            @Override
            public void preload() {
            }

            @Override
            public Tokenizer open(Path tokenizerJson) {
                return new Tokenizer() { // the control plane never tokenizes
                    @Override
                    public long[] encode(String text, boolean addSpecialTokens) {
                        throw new UnsupportedOperationException();
                    }

                    @Override
                    public String decode(long[] ids) {
                        throw new UnsupportedOperationException();
                    }

                    @Override
                    public void close() {
                    }
                };
            }
        };
        catalog = new ModelCatalog(new ModelCatalog.Settings("tiny", tmp.resolve("coordinator"),
                List.of(publisher.publicKeyHex())), registry, tokenizers, (source, bos, eos) -> {
                    throw new UnsupportedOperationException("the control plane never renders a chat");
                });
        Reconciler reconciler = new Reconciler(new Reconciler.Settings("tiny", 3, "butterfly", "1.0.0",
                "capacity-weighted"), new CapacityWeightedPlanner());
        loop = new ControlLoop(reconciler, control, catalog, new ModelFootprints.Settings(64, 1, 1 << 20), workers,
                () -> Optional.of(List.copyOf(members)), Clock.systemUTC());
        loop.commitNoOpOnLeadership();
        loop.start();
    }

    @AfterEach
    void stop() {
        loop.close();
        catalog.close();
        control.close();
    }

    /** config.json and tokenizer.json as published; the weights as one file per layer and end (never read here). */
    private static Manifest manifest(Path dir) throws IOException {
        List<ManifestFile> files = new ArrayList<>();
        files.add(new ManifestFile("config.json", Files.size(dir.resolve("config.json")), "sha256",
                Sha256.hexOfFile(dir.resolve("config.json")), FileKind.CONFIG, null, null, "json"));
        files.add(new ManifestFile("tokenizer.json", Files.size(dir.resolve("tokenizer.json")), "sha256",
                Sha256.hexOfFile(dir.resolve("tokenizer.json")), FileKind.TOKENIZER, null, null, "json"));
        files.add(weights("embedding.safetensors", FileKind.EMBEDDING, null));
        for (int l = 0; l < CONFIG.numLayers(); l++) {
            files.add(weights(ModelGenerator.layerFile(l), FileKind.LAYER, l));
        }
        files.add(weights("head.safetensors", FileKind.HEAD, null));
        String root = MerkleTree.rootHex(files.stream().map(ManifestFile::checksum).toList());
        return new Manifest("tiny", "llama", "1", CONFIG.numLayers(), 0, CONFIG.hiddenSize(), CONFIG.vocabSize(), "F32",
                files, root, 1, null, null);
    }

    private static ManifestFile weights(String name, FileKind kind, Integer layer) {
        return new ManifestFile(name, 10_000, "sha256", Sha256.hex(name.getBytes()), kind, layer,
                layer == null ? null : layer + 1, "safetensors");
    }

    private void lead(long term) {
        leadership.leaderChanged(SELF, term);
        leadership.leaderReady(term);
    }

    private static NodeInfo worker(String id) {
        return new NodeInfo(id, "worker", id, 9000, 8000, 4, 0, 10.0, "cpu");
    }

    private ClusterState awaitReady(long epoch) {
        await("READY in epoch " + epoch).atMost(Duration.ofSeconds(30)).until(() ->
                control.state().system() == SystemState.READY && control.state().epoch() == epoch);
        return control.state();
    }

    @Test
    void bootstrapsToReadyWithValidatedWeightsAndLeavesTheFourthWorkerASpare() {
        members.addAll(List.of(worker("w0"), worker("w1"), worker("w2"), worker("w3")));
        lead(7);
        ClusterState s = awaitReady(1);
        assertThat(s.pipeline()).containsExactly("w0", "w1", "w2");
        assertThat(s.spares()).containsExactly("w3");
        assertThat(s.merkleRoot()).isEqualTo(manifest.merkleRoot());
        assertThat(s.checks().weightsValidFor(1)).isTrue();
        await("the checkpoint after the verdict").atMost(Duration.ofSeconds(10))
                .until(() -> control.state().checkpoints().size() == 1);
        assertThat(workers.calls).containsExactlyInAnyOrder("w0 epoch 1 term 7 since 1", "w1 epoch 1 term 7 since 1",
                "w2 epoch 1 term 7 since 1");
    }

    @Test
    void aLeaderElectedMidBootstrapAnnouncesTheAssignmentsWithItsTermAndFinishesIt() {
        members.addAll(List.of(worker("w0"), worker("w1"), worker("w2")));
        workers.down.add("w2"); // the first leader's bootstrap cannot finish: w2 does not take its assignment
        lead(7);
        await().atMost(Duration.ofSeconds(30)).until(() -> control.state().epoch() == 1
                && control.state().nodes().get("w1").partition().name().equals("READY"));
        assertThat(control.state().system()).isEqualTo(SystemState.BOOTSTRAPPING);

        leadership.notLeader(7); // deposed; another replica leads term 8, then this one again in term 9
        workers.down.remove("w2");
        lead(9);
        ClusterState s = awaitReady(1);
        assertThat(s.pipeline()).containsExactly("w0", "w1", "w2");
        assertThat(workers.calls).contains("w0 epoch 1 term 9 since 1", "w1 epoch 1 term 9 since 1",
                "w2 epoch 1 term 9 since 1");
    }

    @Test
    void aFailedStageIsPlannedAwayOntoTheSpareAndTheSurvivorsAreToldTheyKeepTheirs() {
        members.addAll(List.of(worker("w0"), worker("w1"), worker("w2"), worker("w3")));
        lead(7);
        awaitReady(1);
        workers.calls.clear();

        long now = System.currentTimeMillis();
        control.submit(new ClusterCommand.NodeSuspected("w1", now, 9, "heartbeat stream closed", now));
        control.submit(new ClusterCommand.NodeFailed("w1", now, 9, "heartbeat stream closed", now));
        ClusterState s = awaitReady(2);
        assertThat(s.pipeline()).containsExactly("w0", "w3", "w2");
        assertThat(s.keptStages(1, 2)).containsExactly("w0", "w2");
        assertThat(workers.calls).containsExactlyInAnyOrder("w0 epoch 2 term 7 since 1", "w3 epoch 2 term 7 since 2",
                "w2 epoch 2 term 7 since 1");
        assertThat(s.recovery().toEpoch()).isEqualTo(2);
    }

    /**
     * A drain through the same checks the REST endpoint makes: the stage goes to the spare, the node is dismissed and
     * leaves once the new plan serves; an unknown node and a drain that would leave nothing to serve are refused.
     */
    @Test
    void aDrainedStageMovesToTheSpareThenTheNodeLeavesAndImpossibleDrainsAreRefused() {
        members.addAll(List.of(worker("w0"), worker("w1"), worker("w2"), worker("w3")));
        lead(7);
        awaitReady(1);
        Drains drains = new Drains(control, catalog, new ModelFootprints.Settings(64, 1, 1 << 20),
                new CapacityWeightedPlanner(), Clock.systemUTC());

        assertThat(drains.request("w2").draining()).containsExactly("w2");
        await("w2 gone").atMost(Duration.ofSeconds(30)).until(() -> !control.state().nodes().containsKey("w2"));
        ClusterState s = awaitReady(2);
        assertThat(s.pipeline()).containsExactly("w0", "w1", "w3");
        assertThat(s.plan(2).orElseThrow().reason()).startsWith("w2 drained: spare w3 takes");
        assertThat(workers.calls).contains("w2 dismissed");

        assertThatThrownBy(() -> drains.request("w9")).isInstanceOf(java.util.NoSuchElementException.class);
        drains.request("w0");
        drains.request("w1");
        ClusterState one = await().atMost(Duration.ofSeconds(30)).until(control::state,
                st -> st.system() == SystemState.READY && st.pipeline().size() == 1 && st.draining().isEmpty());
        assertThat(one.pipeline()).containsExactly("w3");
        assertThatThrownBy(() -> drains.request("w3")).isInstanceOf(DrainRefusedException.class)
                .hasMessageContaining("no worker is left to hold it")
                .satisfies(e -> assertThat(((DrainRefusedException) e).capacity().requiredBytes()).isPositive());
        assertThat(control.state().draining()).isEmpty();
    }

    @Test
    void aReplicaThatDoesNotLeadDoesNothing() throws InterruptedException {
        members.addAll(List.of(worker("w0"), worker("w1"), worker("w2")));
        leadership.leaderChanged("coordinator-1", 3);
        Thread.sleep(500);
        assertThat(control.state().system()).isEqualTo(SystemState.UNINITIALIZED);
        assertThat(workers.calls).isEmpty();
    }
}
