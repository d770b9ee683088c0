package io.butterfly.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's "build what is missing" step, on a copy of {@code ./butterfly} in a project tree whose
 * {@code mvnw} only records that it ran, writes the service jars and copies in the real tools jar: a fresh clone
 * (no jars) builds, a built tree does not, a source edited after the build builds again. The tools then run from
 * that tree ({@code build} prints its service jars).
 */
class LauncherBuildIT {

    private static final List<String> SERVICES =
            List.of("discovery-service", "model-registry-service", "worker-service", "coordinator-service");

    @TempDir
    Path root;

    private Path builds;

    @BeforeEach
    void freshCloneWithARecordingBuild() throws IOException {
        Files.copy(LocalCluster.ROOT.resolve("butterfly"), root.resolve("butterfly"));
        root.resolve("butterfly").toFile().setExecutable(true);
        builds = root.resolve("builds.log");
        StringBuilder mvnw = new StringBuilder("#!/usr/bin/env bash\necho \"$*\" >>'" + builds + "'\n");
        for (String m : SERVICES) {
            Files.createDirectories(root.resolve(m).resolve("src/main/java"));
            Files.writeString(root.resolve(m).resolve("src/main/java/App.java"), "class App {}");
            mvnw.append("mkdir -p '").append(root.resolve(m).resolve("target")).append("' && touch '")
                    .append(root.resolve(m).resolve("target").resolve(m + "-0.1.0-exec.jar")).append("'\n");
        }
        Path tools = root.resolve("butterfly-cli");
        Files.createDirectories(tools.resolve("src/main/java"));
        Files.writeString(tools.resolve("src/main/java/Butterfly.java"), "class Butterfly {}");
        mvnw.append("mkdir -p '").append(tools.resolve("target")).append("' && cp '")
                .append(LocalCluster.IMAGES.executableJar("butterfly-cli")).append("' '")
                .append(tools.resolve("target/butterfly-cli-0.1.0-exec.jar")).append("'\n");
        Files.createDirectories(root.resolve("common/core/src/main/java"));
        Files.createDirectories(root.resolve("proto/src/main/proto"));
        Files.writeString(root.resolve("mvnw"), mvnw.toString());
        root.resolve("mvnw").toFile().setExecutable(true);
    }

    @Test
    void buildsOnAFreshCloneOnlyOnceAndAgainAfterASourceChanges() throws Exception {
        String first = launcher("build");
        assertThat(buildCount()).as("a fresh clone has no jars: it builds").isEqualTo(1);
        for (String m : SERVICES) {
            assertThat(first).contains(root.resolve(m).resolve("target").resolve(m + "-0.1.0-exec.jar").toString());
        }

        launcher("build");
        assertThat(buildCount()).as("jars newer than every source: no build").isEqualTo(1);

        Path source = root.resolve("worker-service/src/main/java/App.java");
        Files.setLastModifiedTime(source, FileTime.from(Instant.now().plusSeconds(60)));
        launcher("build");
        assertThat(buildCount()).as("a source newer than its jar: it builds again").isEqualTo(2);
    }

    @Test
    void aToolsSourceNewerThanTheToolsJarBuildsToo() throws Exception {
        launcher("build");
        Path source = root.resolve("butterfly-cli/src/main/java/Butterfly.java");
        Files.setLastModifiedTime(source, FileTime.from(Instant.now().plusSeconds(60)));
        launcher("build");
        assertThat(buildCount()).isEqualTo(2);
    }

    private long buildCount() throws IOException {
        return Files.exists(builds) ? Files.readAllLines(builds).size() : 0;
    }

    private String launcher(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(root.resolve("butterfly").toString()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).directory(root.toFile()).redirectErrorStream(true);
        pb.environment().put("BUTTERFLY_HOME", root.resolve(".butterfly").toString());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("./butterfly %s exited with:%n%s", String.join(" ", args), out).isZero();
        return out;
    }
}
