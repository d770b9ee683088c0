package io.butterfly.it;

import io.butterfly.registry.store.ModelStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * How the tests run a service module, as {@code ./butterfly} does: from its jar extracted by Spring Boot's
 * tools jar mode (plain jars load classes faster than nested ones) and, once a first process of the module
 * has recorded one when it stopped, with a class-data-sharing archive (JDK CDS). Both roughly halve the
 * start-up of the many service JVMs these tests launch.
 *
 * <p>Images live under {@code integration-tests/target/service-images/<module>}, extracted again when the
 * module's jar changes. An archive cut short (its recorder was killed) is refused by a check run and
 * recorded again by a later cluster.
 */
final class ServiceImages {

    private static final Path HOME = LocalCluster.ROOT.resolve("integration-tests/target/service-images");
    private static final String ARCHIVE = "classes.jsa";

    /** Modules with a process recording an archive now, and where it will write it. */
    private static final Map<String, Path> RECORDING = new HashMap<>();

    private ServiceImages() {
    }

    /** The extracted jar to run for {@code module} (extracting it if this build's is not there yet). */
    static synchronized Path jar(String module) {
        Path execJar = execJar(module);
        Path dir = HOME.resolve(module);
        Path stampFile = dir.resolve("stamp");
        try {
            String stamp = Files.size(execJar) + " " + Files.getLastModifiedTime(execJar).toMillis();
            if (!Files.exists(stampFile) || !Files.readString(stampFile).equals(stamp)) {
                ModelStore.deleteRecursively(dir);
                Files.createDirectories(dir);
                run(List.of(javaBin(), "-Djarmode=tools", "-jar", execJar.toString(), "extract",
                        "--destination", dir.resolve("app").toString()));
                Files.writeString(stampFile, stamp);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return dir.resolve("app").resolve(execJar.getFileName());
    }

    /**
     * JVM options for a process {@code name} of {@code module}: the module's archive if there is one,
     * else (first process of the module) record one at exit, else none.
     */
    static synchronized List<String> cdsOptions(String module, String name) {
        Path dir = HOME.resolve(module);
        if (Files.exists(dir.resolve(ARCHIVE))) {
            return List.of("-XX:SharedArchiveFile=" + dir.resolve(ARCHIVE));
        }
        if (RECORDING.containsKey(module)) {
            return List.of();
        }
        Path recorded = dir.resolve("recorded-" + name + ".jsa");
        RECORDING.put(module, recorded);
        // Its warnings name classes CDS cannot hold (signed jars, failed verification): not the test's business.
        return List.of("-XX:ArchiveClassesAtExit=" + recorded, "-Xlog:cds*=error");
    }

    /** True if {@code command} records an archive when its process exits (it needs time to write it). */
    static boolean records(List<String> command) {
        return command.stream().anyMatch(a -> a.startsWith("-XX:ArchiveClassesAtExit="));
    }

    /** After the cluster stopped: keeps each recorded archive a JVM accepts; a module without one records again. */
    static synchronized void settle() {
        for (var e : new ArrayList<>(RECORDING.entrySet())) {
            Path recorded = e.getValue();
            Path archive = recorded.resolveSibling(ARCHIVE);
            try {
                if (Files.exists(recorded) && accepts(e.getKey(), recorded)) {
                    Files.move(recorded, archive, StandardCopyOption.ATOMIC_MOVE);
                } else {
                    Files.deleteIfExists(recorded);
                }
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
            RECORDING.remove(e.getKey());
        }
    }

    private static boolean accepts(String module, Path archive) {
        try {
            run(List.of(javaBin(), "-Xshare:on", "-XX:SharedArchiveFile=" + archive, "-cp", jar(module).toString(),
                    "-version"));
            return true;
        } catch (IOException refused) {
            return false;
        }
    }

    static Path execJar(String module) {
        try (var files = Files.list(LocalCluster.ROOT.resolve(module).resolve("target"))) {
            return files.filter(p -> p.getFileName().toString().endsWith("-exec.jar")).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no exec jar for " + module + "; run the build first"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void run(List<String> command) throws IOException {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException("failed: " + String.join(" ", command));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: " + String.join(" ", command), e);
        }
    }

    static String javaBin() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }
}
