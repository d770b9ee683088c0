package io.butterfly.worker.partition;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.proto.registry.v1.GetManifestRequest;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.testsupport.InProcessGrpc;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.gateway.CoordinatorGateway;
import io.butterfly.worker.gateway.RegistryGateway;
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
        InProcessGrpc registry = InProcessGrpc.serving(new ModelRegistryGrpc.ModelRegistryImplBase() {
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
        });
        PartitionManager manager = new PartitionManager(
                new PartitionSettings("w1", dataDir, List.of(), new ExecutorOptions("cpu", 1)),
                new RegistryGateway((host, port) -> registry.channel(), 5, Duration.ofSeconds(5), 2, false, null),
                new CoordinatorGateway("w1", 100, null, (host, port) -> registry.channel()));
        try {
            manager.assign(request("m1", 1));
            assertThat(asked.get("m1").await(10, TimeUnit.SECONDS)).isTrue();

            manager.assign(request("m2", 2));
            releaseM1.countDown(); // epoch 1's load now fails, if it is still running at all
            assertThat(asked.get("m2").await(10, TimeUnit.SECONDS)).as("epoch 2's load started").isTrue();

            PartitionStatus status = manager.status();
            assertThat(status.epoch()).isEqualTo(2);
            assertThat(status.modelId()).isEqualTo("m2");
            assertThat(status.phase()).isEqualTo(LoadPhase.DOWNLOADING);
            assertThat(status.error()).isNull();
        } finally {
            manager.close();
            registry.close();
        }
    }

    private static Assignment request(String model, long epoch) {
        return new Assignment(model, 0, 2, false, false, epoch, 1, new Endpoint("registry", "127.0.0.1", 1),
                new Endpoint("coordinator-0", "127.0.0.1", 2), List.of());
    }
}
