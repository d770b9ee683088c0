package io.butterfly.it.inprocess;

import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.JsonSchemaStreamsAcrossAKill;
import io.butterfly.it.TinyModels;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Structured output across a node loss in one JVM: JSON-schema generations (greedy and seeded sampling, on a random
 * model whose unconstrained output is gibberish) stream while a pipeline worker is killed (as by SIGKILL: every call
 * to or from it ends at once); they pause, the spare takes the lost stage, they replay their tokens (the grammar's
 * state follows them) and finish with the bytes of a run without the failure ({@link JsonSchemaStreamsAcrossAKill}).
 * With separate processes and a real SIGKILL: StructuredOutputProcessKillIT.
 */
class StructuredOutputResumeIT {

    @TempDir
    Path work;

    @Test
    void aJsonSchemaGenerationThatLosesAWorkerFinishesWithTheBytesOfARunWithoutTheFailure() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 3; i++) { // two stages and a spare
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("tiny-llama", 2, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            JsonSchemaStreamsAcrossAKill.run(cluster, cluster::kill, "StructuredOutputResumeIT");
        }
    }
}
