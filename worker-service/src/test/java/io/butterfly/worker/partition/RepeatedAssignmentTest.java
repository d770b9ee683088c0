package io.butterfly.worker.partition;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.grpc.ManifestMessages;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.ManifestVerifier;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.coordinator.v1.HeartbeatAck;
import io.butterfly.proto.coordinator.v1.HeartbeatPing;
import io.butterfly.proto.coordinator.v1.LoadReport;
import io.butterfly.proto.coordinator.v1.LoadReportAck;
import io.butterfly.proto.registry.v1.FetchFileRequest;
import io.butterfly.proto.registry.v1.FileChunk;
import io.butterfly.proto.registry.v1.FileKind;
import io.butterfly.proto.registry.v1.GetManifestRequest;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.proto.registry.v1.WeightFile;
import io.butterfly.testsupport.InProcessGrpc;
import io.butterfly.testsupport.ModelFixtures;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.engine.PartitionExecutor;
import io.butterfly.worker.engine.SequenceChunk;
import io.butterfly.worker.engine.StageInput;
import io.butterfly.worker.gateway.CoordinatorGateway;
import io.butterfly.worker.gateway.RegistryGateway;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The coordinator sends a worker the assignment it already holds READY when its state lacks that (the first READY
 * report was refused while it held the node FAILED): the worker says READY again, from the partition it has, instead
 * of ignoring the request or loading it again. A repeat that arrives while the load is still running says nothing
 * early. A new epoch of the same stage (a re-plan moved others) is held on without loading, its KV caches kept; a
 * dismissal frees it. A real load of a one-layer Llama stage from a fake registry (signed manifest, chunked files), reporting to
 * a fake coordinator over (in-process) gRPC.
 */
class RepeatedAssignmentTest {

    private static final String MODEL = "m";
    private static final String LAYER_0 = ModelGenerator.layerFile(0);
    /** The worker's butterfly.worker.kv-cache-budget, reported with READY. */
    private static final long KV_CACHE_BUDGET = 64L << 20;
    private static final ModelConfig CONFIG = new ModelConfig(Architecture.LLAMA, 2, 8, 2, 1, 16, 16, 32, 1e-5,
            10000.0, false, 1, 2);

    /** Serves one signed manifest and its files; counts what it is asked; may hold the manifest back. */
    static final class FakeRegistry extends ModelRegistryGrpc.ModelRegistryImplBase {
        final AtomicInteger manifests = new AtomicInteger();
        final AtomicInteger fetches = new AtomicInteger();
        final CountDownLatch manifestAsked = new CountDownLatch(1);
        volatile CountDownLatch release = new CountDownLatch(0);
        ModelManifest manifest;
        Path dir;

        @Override
        public void getManifest(GetManifestRequest request, StreamObserver<ModelManifest> response) {
            manifests.incrementAndGet();
            manifestAsked.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            response.onNext(manifest);
            response.onCompleted();
        }

        @Override
        public void fetchFile(FetchFileRequest request, StreamObserver<FileChunk> response) {
            fetches.incrementAndGet();
            byte[] all;
            try {
                all = Files.readAllBytes(dir.resolve(request.getFileName()));
            } catch (IOException e) {
                response.onError(e);
                return;
            }
            byte[] rest = Arrays.copyOfRange(all, (int) request.getOffset(), all.length);
            CRC32C crc = new CRC32C();
            crc.update(rest);
            response.onNext(FileChunk.newBuilder().setFileName(request.getFileName()).setOffset(request.getOffset())
                    .setData(ByteString.copyFrom(rest)).setCrc32C((int) crc.getValue()).setFileSize(all.length)
                    .setLast(true).build());
            response.onCompleted();
        }
    }

    /** Records the load reports it receives; acknowledges heartbeats. */
    static final class FakeCoordinator extends CoordinatorServiceGrpc.CoordinatorServiceImplBase {
        final List<LoadReport> reports = new CopyOnWriteArrayList<>();

        @Override
        public void reportLoad(LoadReport report, StreamObserver<LoadReportAck> response) {
            reports.add(report);
            response.onNext(LoadReportAck.getDefaultInstance());
            response.onCompleted();
        }

        @Override
        public StreamObserver<HeartbeatPing> heartbeatStream(StreamObserver<HeartbeatAck> acks) {
            return new StreamObserver<>() {
                @Override
                public void onNext(HeartbeatPing ping) {
                    acks.onNext(HeartbeatAck.newBuilder().setSequence(ping.getSequence()).build());
                }

                @Override
                public void onError(Throwable t) {
                }

                @Override
                public void onCompleted() {
                    acks.onCompleted();
                }
            };
        }

        List<LoadPhase> phases() {
            return reports.stream().map(r -> LoadPhase.valueOf(r.getPhase().name())).toList();
        }
    }

    @TempDir
    Path tmp;

    private final FakeRegistry registry = new FakeRegistry();
    private final FakeCoordinator coordinator = new FakeCoordinator();
    private InProcessGrpc peers;
    private PartitionManager manager;

    @BeforeEach
    void start() throws Exception {
        NodeIdentity publisher = NodeIdentity.ephemeral();
        registry.dir = Files.createDirectories(tmp.resolve("published"));
        registry.manifest = publish(registry.dir, publisher);
        // Both fakes in one in-process server: every address the worker dials leads there.
        peers = InProcessGrpc.serving(registry, coordinator);
        manager = new PartitionManager(new PartitionSettings("w1", tmp.resolve("worker"),
                List.of(publisher.publicKeyHex()), new ExecutorOptions("cpu", 1, KV_CACHE_BUDGET)),
                new RegistryGateway((host, port) -> peers.channel(), 5, Duration.ofSeconds(5), 2, false, null),
                new CoordinatorGateway("w1", 100, null, (host, port) -> peers.channel()));
    }

    @AfterEach
    void stop() {
        registry.release.countDown();
        manager.close();
        peers.close();
    }

    @Test
    void theSameAssignmentOfTheReadyPartitionIsReportedReadyAgainWithoutReloading() {
        manager.assign(assignment());
        awaitReports(LoadPhase.READY, 1);
        LoadReport firstReady = coordinator.reports.get(coordinator.reports.size() - 1);
        assertThat(firstReady.getPhase()).isEqualTo(io.butterfly.proto.coordinator.v1.LoadPhase.READY);
        assertThat(coordinator.phases()).containsSubsequence(LoadPhase.VALIDATING, LoadPhase.LOADED,
                LoadPhase.WARMING, LoadPhase.READY);
        int reportsBefore = coordinator.reports.size();
        PartitionExecutor loaded = manager.loadedExecutor();
        assertThat(loaded).isNotNull();
        assertThat(registry.manifests).hasValue(1);
        assertThat(registry.fetches).hasValue(2); // config.json and the layer

        // The coordinator asks again for what the worker holds (same model, epoch, layers and term).
        manager.assign(assignment());

        awaitReports(LoadPhase.READY, 2);
        // Exactly one more report, the same LoadComplete as before: nothing was loaded or fetched again.
        assertThat(coordinator.reports).hasSize(reportsBefore + 1);
        assertThat(coordinator.reports.get(reportsBefore)).isEqualTo(firstReady);
        assertThat(firstReady.getEpoch()).isEqualTo(1);
        assertThat(firstReady.getModelId()).isEqualTo(MODEL);
        assertThat(firstReady.getNodeId()).isEqualTo("w1");
        assertThat(firstReady.getPartitionChecksum()).isEqualTo(registry.manifest.getMerkleRoot());
        assertThat(firstReady.getKvCacheBudgetBytes()).isEqualTo(KV_CACHE_BUDGET);
        assertThat(registry.manifests).hasValue(1);
        assertThat(registry.fetches).hasValue(2);
        assertThat(manager.loadedExecutor()).isSameAs(loaded);
        assertThat(manager.status().phase()).isEqualTo(LoadPhase.READY);
    }

    @Test
    void theSameAssignmentWhileItIsStillLoadingSaysNothingEarly() throws Exception {
        registry.release = new CountDownLatch(1); // the manifest is held back: the load has not got anywhere yet
        manager.assign(assignment());
        assertThat(registry.manifestAsked.await(10, TimeUnit.SECONDS)).isTrue();

        manager.assign(assignment());
        registry.release.countDown();

        awaitReports(LoadPhase.READY, 1);
        // Reports leave in order: a READY made for the repeat would have come before the load's own phases.
        assertThat(coordinator.phases()).containsOnlyOnce(LoadPhase.READY).endsWith(LoadPhase.READY)
                .containsSubsequence(LoadPhase.VALIDATING, LoadPhase.LOADED, LoadPhase.WARMING, LoadPhase.READY);
        assertThat(coordinator.phases().subList(0, coordinator.phases().indexOf(LoadPhase.VALIDATING)))
                .allSatisfy(phase -> assertThat(phase).isEqualTo(LoadPhase.DOWNLOADING));
        assertThat(registry.manifests).as("the repeat did not start a second load").hasValue(1);
    }

    @Test
    void aNewAssignmentFreesThePartitionItReplacesWithoutWaitingForItsOwnLoad() throws Exception {
        manager.assign(assignment());
        awaitReports(LoadPhase.READY, 1);
        PartitionExecutor old = manager.loadedExecutor();
        assertThat(old).isNotNull();

        // Epoch 2 is assigned; its manifest is held back, so its load does not finish (or, later, fails).
        registry.release = new CountDownLatch(1);
        manager.assign(assignment(2));

        // Nothing can run on epoch 1's partition any more: it must not hold its weights and caches meanwhile
        // (a worker sized for one partition held two while the new one loaded, and kept the old one for ever
        // if the new load failed).
        ByteBuffer zeros = ByteBuffer.allocate(CONFIG.hiddenSize() * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        await("epoch 1's partition closed").atMost(Duration.ofSeconds(10)).untilAsserted(() ->
                assertThatThrownBy(() -> old.forward(List.of(new SequenceChunk("s", 0, 1)), new StageInput.Hidden(zeros)))
                        .hasMessageContaining("replaced"));
        assertThat(manager.loadedExecutor()).isNull();
    }

    /**
     * A re-plan that leaves this stage where it is (other stages moved): the new epoch runs on the partition already
     * loaded, with every sequence's KV cache, and nothing is fetched or loaded again; steps of the old epoch are refused
     * from then on. Held from before a break (this worker was out of the plan in between), the weights are kept but the
     * caches are not: their sequences ran elsewhere meanwhile.
     */
    @Test
    void aNewEpochOfTheSameStageKeepsThePartitionAndItsCachesOrOnlyItsWeightsAfterABreak() {
        manager.assign(assignment(1, 1));
        awaitReports(LoadPhase.READY, 1);
        PartitionExecutor loaded = manager.loadedExecutor();
        ByteBuffer hidden = ByteBuffer.allocate(CONFIG.hiddenSize() * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        loaded.forward(List.of(new SequenceChunk("seq", 0, 1)), new StageInput.Hidden(hidden));
        assertThat(loaded.cachedSequences()).isEqualTo(1);

        manager.assign(assignment(2, 1)); // held since epoch 1: the cache of epoch 1's sequence goes on in epoch 2
        awaitReports(LoadPhase.READY, 2);
        assertThat(coordinator.reports.get(coordinator.reports.size() - 1).getEpoch()).isEqualTo(2);
        assertThat(manager.loadedExecutor()).isSameAs(loaded);
        assertThat(manager.status().epoch()).isEqualTo(2);
        assertThat(loaded.cachedSequences()).isEqualTo(1);
        hidden.rewind();
        loaded.forward(List.of(new SequenceChunk("seq", 1, 1)), new StageInput.Hidden(hidden)); // position 1: kept
        assertThat(registry.manifests).as("nothing fetched again").hasValue(1);
        assertThat(registry.fetches).hasValue(2);

        manager.assign(assignment(4, 4)); // the same stage, but new to this worker in epoch 4 (out of epoch 3's plan)
        awaitReports(LoadPhase.READY, 3);
        assertThat(manager.loadedExecutor()).isSameAs(loaded);
        assertThat(manager.status().epoch()).isEqualTo(4);
        assertThat(loaded.cachedSequences()).as("caches of before the break dropped").isZero();
        assertThat(registry.manifests).hasValue(1);

        assertThatThrownBy(() -> manager.assign(assignment(3, 1))).hasMessageContaining("older than epoch 4");
    }

    /** A drained worker leaves: its partition is freed and nothing older than the dismissal is taken any more. */
    @Test
    void aDismissalFreesThePartitionAndFencesOlderAssignments() {
        manager.assign(assignment(1, 1));
        awaitReports(LoadPhase.READY, 1);
        PartitionExecutor loaded = manager.loadedExecutor();

        manager.dismiss(2, 3);
        assertThat(manager.loadedExecutor()).isNull();
        assertThat(manager.status().modelId()).isNull();
        ByteBuffer hidden = ByteBuffer.allocate(CONFIG.hiddenSize() * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        await("the dismissed partition closed").atMost(Duration.ofSeconds(10)).untilAsserted(() ->
                assertThatThrownBy(() -> loaded.forward(List.of(new SequenceChunk("s", 0, 1)), new StageInput.Hidden(hidden)))
                        .hasMessageContaining("replaced"));
        assertThatThrownBy(() -> manager.assign(assignment(1, 1))).hasMessageContaining("older than epoch 2");
        assertThatThrownBy(() -> manager.dismiss(2, 2)).hasMessageContaining("older than term 3");
    }

    /**
     * A spare's copy of a serving stage for step audits is outside the plan: it loads and serves as any, but no load
     * report leaves for it (the control log refused each, after committing it); the next assignment of the plan
     * reports as before.
     */
    @Test
    void anAuditAssignmentLoadsWithoutReportingAndTheNextPlanAssignmentReports() {
        Assignment plan = assignment(1);
        manager.assign(new Assignment(plan.modelId(), plan.layerStart(), plan.layerEnd(), plan.hasEmbedding(),
                plan.hasHead(), plan.epoch(), plan.term(), plan.registry(), plan.coordinator(),
                plan.coordinatorReplicas(), plan.keptSinceEpoch(), plan.expertGroups(), plan.expertGroup(),
                plan.stepsSinceEpoch(), true));
        await("the audit copy loaded").atMost(Duration.ofSeconds(60))
                .until(() -> manager.status().phase() == LoadPhase.READY && manager.loadedExecutor() != null);
        assertThat(coordinator.reports).as("no load report for an audit assignment").isEmpty();

        manager.assign(assignment(2, 1)); // the same stage in the plan of epoch 2: held on, and said READY
        awaitReports(LoadPhase.READY, 1);
        assertThat(coordinator.reports).allSatisfy(r -> assertThat(r.getEpoch()).isEqualTo(2));
    }

    private static Assignment assignment() {
        return assignment(1);
    }

    private static Assignment assignment(long epoch) {
        return assignment(epoch, 0);
    }

    private static Assignment assignment(long epoch, long keptSince) {
        return new Assignment(MODEL, 0, 1, false, false, epoch, 3, new Endpoint("registry", "127.0.0.1", 1),
                new Endpoint("coordinator-0", "127.0.0.1", 2), List.of(), keptSince);
    }

    /** The first load starts the engine, which may take a while on a busy machine; a repeat is answered at once. */
    private void awaitReports(LoadPhase phase, int count) {
        await(count + " " + phase + " report(s)").atMost(Duration.ofSeconds(count == 1 ? 60 : 10))
                .until(() -> coordinator.phases().stream().filter(p -> p == phase).count() >= count);
    }

    /** Writes config.json and layer 0 of a tiny Llama into {@code dir}; the signed manifest of both. */
    private static ModelManifest publish(Path dir, NodeIdentity publisher) throws IOException {
        ModelFixtures.write(CONFIG, ModelFixtures.weightsOnly().withPerLayerFiles(), 42, dir);
        List<WeightFile> files = List.of(
                file(dir, "config.json", FileKind.CONFIG, "json", 0, 0),
                file(dir, LAYER_0, FileKind.LAYER, "safetensors", 0, 1));
        ModelManifest unsigned = ModelManifest.newBuilder().setModelId(MODEL).setArchitecture("llama").setVersion("1")
                .setNumLayers(CONFIG.numLayers()).setHiddenSize(CONFIG.hiddenSize()).setVocabSize(CONFIG.vocabSize())
                .setDtype("F32").addAllFiles(files)
                .setMerkleRoot(MerkleTree.rootHex(files.stream().map(WeightFile::getChecksum).toList()))
                .build();
        return ManifestMessages.toProto(ManifestVerifier.sign(ManifestMessages.fromProto(unsigned), publisher));
    }

    private static WeightFile file(Path dir, String name, FileKind kind, String format, int start, int end)
            throws IOException {
        Path f = dir.resolve(name);
        return WeightFile.newBuilder().setName(name).setSizeBytes(Files.size(f)).setChecksumAlgorithm("sha256")
                .setChecksum(Sha256.hexOfFile(f)).setKind(kind).setFormat(format).setLayerStart(start)
                .setLayerEnd(end).build();
    }
}
