package io.butterfly.cli.cluster;

import io.butterfly.cli.command.CommandFailedException;
import io.butterfly.cli.home.ButterflyHome;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LauncherTest {

    @TempDir
    Path root;

    @Test
    void psPrintsTheProcessListAsAJsonArrayOneProcessPerLine() throws Exception {
        Launcher launcher = new Launcher(new ButterflyHome(root, root.resolve(".butterfly")), PortLayout.withOffset(0));
        assertThat(launcher.ps()).isEqualTo("[]");

        Files.createDirectories(root.resolve(".butterfly/run"));
        Files.writeString(root.resolve(".butterfly/run/procs"), """
                discovery discovery 2147483 discovery-0 8082 9082
                worker-0 worker 2147484 worker-0 8090 9090
                """);
        assertThat(launcher.ps()).isEqualTo("""
                [
                  {"name": "discovery", "role": "discovery", "pid": 2147483, "node_id": "discovery-0", "http_port": 8082, "grpc_port": 9082, "alive": false},
                  {"name": "worker-0", "role": "worker", "pid": 2147484, "node_id": "worker-0", "http_port": 8090, "grpc_port": 9090, "alive": false}
                ]""");
    }

    @Test
    void workersSharingTheCoresTakeOneMicroBatchAtATimeUnlessTheCoordinatorIsToldOtherwise() {
        String one = "--butterfly.coordinator.engine.micro-batches-in-flight=1";
        UpOptions three = UpOptions.defaults().withWorkers(3);
        assertThat(Launcher.microBatchPolicy(three)).containsExactly(one);
        assertThat(Launcher.microBatchPolicy(UpOptions.defaults().withWorkers(1))).isEmpty();
        assertThat(Launcher.microBatchPolicy(three.withPinnedWorkers(true))).isEmpty();
        assertThat(Launcher.microBatchPolicy(three.withCoordinatorArgs(
                List.of("--butterfly.coordinator.engine.micro-batches-in-flight=3")))).isEmpty();
    }

    @Test
    void aPinnedWorkerComputesWithTheOneCoreItIsPinnedToWhateverTheWorkerCount() {
        int cores = Runtime.getRuntime().availableProcessors();
        for (int workers = 1; workers <= 2 * cores + 1; workers++) {
            assertThat(Launcher.threadsPerWorker(workers, true)).as("%d pinned workers", workers).isEqualTo(1);
            assertThat(Launcher.threadsPerWorker(workers, false)).as("%d workers", workers).isEqualTo(cores);
        }
    }

    @Test
    void aModelDirectoryTheRegistryCannotImportIsRefusedBeforeAnythingStarts() throws Exception {
        Launcher launcher = new Launcher(new ButterflyHome(root, root.resolve(".butterfly")), PortLayout.withOffset(0));
        Path model = Files.createDirectories(root.resolve("quantized-copy"));
        Files.writeString(model.resolve("config.json"), "{}");
        Files.write(model.resolve("model.safetensors"), new byte[8]);
        UpOptions options = UpOptions.defaults().withModel(model).withInsecure(true);
        java.io.PrintWriter out = new java.io.PrintWriter(java.io.Writer.nullWriter());

        assertThatThrownBy(() -> launcher.up(options, out)).isInstanceOf(CommandFailedException.class)
                .hasMessageContaining("has no tokenizer.json");
        Files.writeString(model.resolve("tokenizer.json"), "{}");
        Files.delete(model.resolve("model.safetensors"));
        assertThatThrownBy(() -> launcher.up(options, out)).isInstanceOf(CommandFailedException.class)
                .hasMessageContaining("has no *.safetensors");
        assertThat(launcher.running()).isFalse();
    }

    @Test
    void downWithNothingStartedStopsNothing() {
        Launcher launcher = new Launcher(new ButterflyHome(root, root.resolve(".butterfly")), PortLayout.withOffset(0));
        launcher.down();
        assertThat(launcher.running()).isFalse();
    }

    @Test
    void servicesStartedAtTheTimeOfTheirStartedLine() throws Exception {
        Path log = Files.writeString(root.resolve("worker-0.log"), """
                2026-11-26T20:10:01.000Z  INFO 1 --- [main] i.b.worker.WorkerApplication : Starting WorkerApplication
                2026-11-26T20:10:03.123+01:00  INFO 1 --- [main] i.b.worker.WorkerApplication : Started WorkerApplication in 3.2 seconds
                2026-11-26T20:10:04.000Z  INFO 1 --- [main] i.b.worker.WorkerApplication : Started WorkerApplication in 9 seconds
                """);
        assertThat(Launcher.startedAt(log)).contains(Instant.parse("2026-11-26T19:10:03.123Z"));
        assertThat(Launcher.startedAt(root.resolve("none.log"))).isEmpty();
    }
}
