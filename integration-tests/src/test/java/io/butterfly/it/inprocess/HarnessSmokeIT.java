package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HarnessSmokeIT {

    @TempDir
    Path work;

    @Test
    void startsAndServes() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(new ModelConfig(Architecture.LLAMA, 4, 64, 4, 2, 160, 512, 256,
                1e-5, 10000.0, false, 1, 2), 5, model);
        long t0 = System.nanoTime();
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startAll(model, 2);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(3));
            System.out.printf("READY after %d ms%n", (System.nanoTime() - t0) / 1_000_000);
            ClusterApi.Reply r = cluster.post("/api/v1/inference", "{\"token_ids\": [1, 17, 230], \"max_tokens\": 8}");
            assertThat(r.status()).as(r.body()).isEqualTo(200);
            System.out.println(r.body());
        }
        System.out.printf("closed after %d ms%n", (System.nanoTime() - t0) / 1_000_000);
    }
}
