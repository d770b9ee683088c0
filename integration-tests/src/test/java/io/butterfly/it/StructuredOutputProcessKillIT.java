package io.butterfly.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.ModelGenerator;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker process SIGKILLed in the middle of JSON-schema generations: discovery, registry, coordinator and three
 * workers (two stages and a spare) as separate JVMs over mutual TLS, as {@code ./butterfly up} runs them; the second
 * stage's JVM gets SIGKILL while a greedy and a sampled generation stream; each resumed output is the fault-free one,
 * token for token and byte for byte, a value of its schema ({@link JsonSchemaStreamsAcrossAKill}; in one JVM:
 * StructuredOutputResumeIT).
 */
class StructuredOutputProcessKillIT {

    @TempDir
    Path work;

    @Test
    void aWorkerSigkilledMidJsonSchemaGenerationLeavesTheFaultFreeBytes() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        try (LocalCluster cluster = new LocalCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 3; i++) { // two stages and a spare
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("tiny-llama", 2, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            JsonSchemaStreamsAcrossAKill.run(cluster, victim -> {
                long pid = cluster.pid(victim);
                cluster.kill(victim); // SIGKILL, then waits for the process to exit
                assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
                        .as("%s (pid %d) is gone", victim, pid).isFalse();
            }, "StructuredOutputProcessKillIT");
        }
    }
}
