package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * A shard whose bytes no longer match the manifest is refused: the worker never becomes READY, the
 * system state says which file and both checksums, and inference is refused with 409.
 */
class CorruptShardIT {

    @TempDir
    Path work;

    /**
     * @param sharedStore whether the worker looks for its shards in the registry's store first: the flipped bit
     *                    fails its check there, the shard is streamed instead, and the registry refuses to serve it
     */
    @ParameterizedTest(name = "shared store: {0}")
    @ValueSource(booleans = {false, true})
    void corruptedShardIsRefusedAndTheStateSaysWhy(boolean sharedStore) throws Exception {
        ModelConfig config = new ModelConfig(Architecture.LLAMA, 3, 32, 4, 2, 64, 320, 64, 1e-5, 10000, false, 1, 2);
        Path model = work.resolve("tampered");
        ModelGenerator.generate(config, 3, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startRegistry(model);
            awaitModel(cluster, "tampered", Duration.ofMinutes(2));
            Path shard;
            try (Stream<Path> files = Files.walk(cluster.registryStore())) {
                shard = files.filter(p -> p.getFileName().toString().equals("layer-00001.safetensors")).findFirst().orElseThrow();
            }
            flipOneBit(shard, Files.size(shard) - 5);

            cluster.startDiscovery();
            cluster.startWorker(0, sharedStore ? new String[] {cluster.sharedStoreOption()} : new String[0]);
            cluster.startCoordinator("tampered", 1);
            JsonNode state = cluster.awaitState(s -> failedWorker(s) != null, Duration.ofMinutes(4));

            JsonNode worker = failedWorker(state);
            assertThat(state.path("system_state").asString()).isEqualTo("BOOTSTRAPPING");
            assertThat(worker.path("state").asString()).isEqualTo("FAILED");
            assertThat(worker.path("error").path("code").asString()).isEqualTo("CHECKSUM_MISMATCH");
            String message = worker.path("error").path("message").asString();
            assertThat(message).contains("layer-00001.safetensors");
            assertThat(message.split("[0-9a-f]{64}", -1).length - 1).as("both checksums in: %s", message).isGreaterThanOrEqualTo(2);
            assertThat(state.path("status_message").asString()).contains("layer-00001.safetensors");

            ClusterApi.Reply r = cluster.post("/api/v1/inference", "{\"token_ids\": [1, 2, 3], \"max_tokens\": 2}");
            assertThat(r.status()).isEqualTo(409);
            assertThat(r.contentType()).startsWith("application/problem+json");
        }
    }

    private static JsonNode failedWorker(JsonNode state) {
        for (JsonNode n : state.path("nodes")) {
            if ("FAILED".equals(n.path("state").asString())) {
                return n;
            }
        }
        return null;
    }

    /** Waits until the registry has imported the model (its manifest is served). */
    private static void awaitModel(InProcessCluster cluster, String modelId, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        String url = cluster.urlOf("registry") + "/api/v1/models/" + modelId;
        while (System.nanoTime() < deadline) {
            try {
                if (cluster.getAbsolute(url).status() == 200) {
                    return;
                }
            } catch (java.io.IOException e) {
                // not up yet
            }
            Thread.sleep(300);
        }
        throw new IllegalStateException("registry never served " + modelId + "\n" + cluster.diagnostics());
    }

    private static void flipOneBit(Path file, long offset) throws Exception {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(offset);
            int b = raf.read();
            raf.seek(offset);
            raf.write(b ^ 0x10);
        }
    }
}
