package io.butterfly.worker.partition;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.coordinator.v1.LoadPhase;
import io.butterfly.proto.registry.v1.GetManifestRequest;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.worker.cluster.CoordinatorLink;
import io.butterfly.worker.cluster.PeerChannels;
import io.butterfly.worker.config.RegistryClientProperties;
import io.butterfly.worker.config.WorkerProperties;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.util.unit.DataSize;

/**
 * A new assignment supersedes the load still running for the previous one: that load is cancelled and its
 * late outcome (here: a failure) never lands on the new assignment's status.
 */
class SupersededLoadTest {

    @TempDir
    Path dataDir;

    @Test
    void aSupersededLoadThatFailsLateLeavesTheNewAssignmentsStatusAlone() throws Exception {
        Map<String, CountDownLatch> asked = new ConcurrentHashMap<>(Map.of("m1", new CountDownLatch(1), "m2", new CountDownLatch(1)));
        CountDownLatch releaseM1 = new CountDownLatch(1);
        // A registry whose manifests take their time: m1 is refused once released, m2 never answers.
        Server registry = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
                .addService(new ModelRegistryGrpc.ModelRegistryImplBase() {
                    @Override
                    public void getManifest(GetManifestRequest request, StreamObserver<ModelManifest> response) {
                        asked.get(request.getModelId()).countDown();
                        if (request.getModelId().equals("m1")) {
                            try {
                                releaseM1.await(30, TimeUnit.SECONDS);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                            response.onError(Status.NOT_FOUND.withDescription("m1 is gone").asRuntimeException());
                        }
                    }
                })
                .build().start();
        WorkerProperties props = new WorkerProperties("w1", "127.0.0.1", dataDir, "cpu", 1, "butterfly", "127.0.0.1",
                1, 100, "127.0.0.1", 0, List.of(), 5000, DataSize.ofBytes(0), java.time.Duration.ofMinutes(10), DataSize.ofBytes(0));
        PeerChannels channels = new PeerChannels();
        PartitionManager manager = new PartitionManager(props,
                new RegistryClientProperties(5, Duration.ofSeconds(5), 2, false, null), channels, new CoordinatorLink(props, channels));
        try {
            manager.assign(request("m1", 1, registry.getPort()));
            assertThat(asked.get("m1").await(10, TimeUnit.SECONDS)).isTrue();

            manager.assign(request("m2", 2, registry.getPort()));
            releaseM1.countDown(); // epoch 1's load now fails, if it is still running at all
            assertThat(asked.get("m2").await(10, TimeUnit.SECONDS)).as("epoch 2's load started").isTrue();

            PartitionStatus status = manager.status();
            assertThat(status.epoch()).isEqualTo(2);
            assertThat(status.modelId()).isEqualTo("m2");
            assertThat(status.phase()).isEqualTo(LoadPhase.DOWNLOADING);
            assertThat(status.error()).isNull();
        } finally {
            manager.close();
            registry.shutdownNow();
        }
    }

    private static AssignPartitionRequest request(String model, long epoch, int registryPort) {
        return AssignPartitionRequest.newBuilder().setModelId(model).setTerm(1).setEpoch(epoch)
                .setLayers(LayerRange.newBuilder().setStart(0).setEnd(2))
                .setRegistry(Endpoint.newBuilder().setNodeId("registry").setHost("127.0.0.1").setGrpcPort(registryPort))
                .setCoordinator(Endpoint.newBuilder().setNodeId("coordinator-0").setHost("127.0.0.1").setGrpcPort(1))
                .build();
    }
}
