package io.butterfly.cli.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * What a service process runs: its module's jar as extracted by Spring Boot's tools jar mode (classes load from
 * plain jars, not nested ones) and, once a first process of the module has recorded one when it stopped, a
 * class-data archive of the classes that process loaded. Together they cut a service's start-up by about half.
 *
 * <p>A module's image is a directory per JVM runtime (an archive only fits the JVM that wrote it), extracted
 * afresh when the module's jar changes, which also drops its archive. The first process of each module started
 * through this instance records an archive at exit; {@link #settle} then keeps the first recorded archive a JVM
 * accepts (one cut short by a kill is refused), and the module records again if none was.
 */
public final class ServiceImages {

    /** The service modules, each built into {@code <module>/target/<module>-<version>-exec.jar}. */
    public static final List<String> SERVICE_MODULES =
            List.of("discovery-service", "model-registry-service", "worker-service", "coordinator-service");

    private static final String ARCHIVE = "classes";
    private static final String RECORDED = "recorded-";

    private final Path root;
    private final Function<String, Path> homes;
    private final JavaRuntime java;
    private final ArchiveFormat format;
    /** Modules with a process of this instance recording an archive (it writes it when it exits). */
    private final Set<String> recording = new HashSet<>();
    /** Whether processes use and record class-data archives, or run the extracted jars only. */
    private final boolean archives;

    private ServiceImages(Path root, Function<String, Path> homes, JavaRuntime java, boolean archives) {
        this.root = root;
        this.homes = homes;
        this.java = java;
        this.format = java.archiveFormat();
        this.archives = archives;
    }

    /** Images beside each module's jar: {@code <root>/<module>/target/app-<runtime>} (the launcher's). */
    public static ServiceImages besideTheJars(Path root, JavaRuntime java) {
        return new ServiceImages(root, module -> root.resolve(module).resolve("target"), java, true);
    }

    /** Images under one directory, {@code <dir>/<module>/app-<runtime>}: apart from the launcher's (tests). */
    public static ServiceImages under(Path dir, Path root, JavaRuntime java) {
        return new ServiceImages(root, dir::resolve, java, true);
    }

    /**
     * Extracted jars under one directory, as {@link #under}, without class-data archives: for short-lived test
     * clusters, where recording one (a dump at each module's first exit, then a check of it) cost more than it saved.
     * The integration tests' first cluster of processes started in 134 s with archives, 64 s without, and the
     * clusters after it as fast without one.
     */
    public static ServiceImages extractedUnder(Path dir, Path root, JavaRuntime java) {
        return new ServiceImages(root, dir::resolve, java, false);
    }

    public JavaRuntime java() {
        return java;
    }

    /** The module's executable jar as the build left it. */
    public Path executableJar(String module) {
        Path target = root.resolve(module).resolve("target");
        try (Stream<Path> files = Files.exists(target) ? Files.list(target) : Stream.empty()) {
            return files.filter(p -> p.getFileName().toString().startsWith(module + "-")
                            && p.getFileName().toString().endsWith("-exec.jar"))
                    .findFirst()
                    .orElseThrow(() -> new IllegalStateException("no executable jar of " + module + " in " + target
                            + "; build it first (./mvnw -B -DskipTests install)"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The extracted jar to run for {@code module}, extracting this build's jar first unless it is already. */
    public synchronized Path jar(String module) {
        Path jar = executableJar(module);
        Path dir = dir(module);
        try {
            Files.createDirectories(dir.getParent());
            // Another JVM (a second test fork, another launcher) may check and extract the same image at once: one
            // at a time, so none replaces an image the other's processes already run from. (A file lock is held per
            // JVM, hence the monitor for this JVM's other instances.)
            synchronized (ServiceImages.class) {
                try (FileChannel lockFile = FileChannel.open(dir.getParent().resolve(dir.getFileName() + ".lock"),
                        StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                     FileLock ignored = lockFile.lock()) {
                    extractUnlessCurrent(jar, dir);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return dir.resolve("app").resolve(jar.getFileName());
    }

    private void extractUnlessCurrent(Path jar, Path dir) throws IOException {
        String stamp = Files.size(jar) + " " + Files.getLastModifiedTime(jar).to(TimeUnit.SECONDS);
        Path stampFile = dir.resolve("stamp");
        if (Files.isRegularFile(stampFile) && Files.readString(stampFile).strip().equals(stamp)) {
            return;
        }
        Path fresh = Files.createTempDirectory(dir.getParent(), dir.getFileName() + ".");
        if (!run(List.of(java.java(), "-Djarmode=tools", "-jar", jar.toString(), "extract", "--destination",
                fresh.resolve("app").toString()))) {
            FileTrees.delete(fresh);
            throw new IllegalStateException("could not extract " + jar);
        }
        Files.writeString(fresh.resolve("stamp"), stamp + "\n");
        FileTrees.delete(dir);
        try {
            Files.move(fresh, dir, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException anotherGotThereFirst) { // the same build's content
            FileTrees.delete(fresh);
        }
    }

    /**
     * Class-data sharing options for process {@code process} of {@code module}: its archive if there is one;
     * else, for the first process of the module started here, recording one at exit; else none.
     */
    public synchronized List<String> archiveOptions(String module, String process) {
        if (!archives) {
            return List.of();
        }
        Path archive = dir(module).resolve(format.fileName(ARCHIVE));
        if (!Files.exists(archive)) {
            keepArchive(module);
        }
        if (Files.exists(archive)) {
            return format.use(archive);
        }
        if (recording.add(module)) {
            String name = RECORDED + process + "-" + ThreadLocalRandom.current().nextInt(1 << 15);
            return format.record(dir(module).resolve(format.fileName(name)));
        }
        return List.of();
    }

    /** Whether {@code command} records an archive when its process exits (and needs time to write it). */
    public static boolean records(List<String> command) {
        return ArchiveFormat.records(command);
    }

    /** After the processes stopped: keeps each module's first acceptable recorded archive, drops the others. */
    public synchronized void settle() {
        SERVICE_MODULES.forEach(this::keepArchive);
        recording.clear();
    }

    private void keepArchive(String module) {
        Path dir = dir(module);
        if (!Files.isDirectory(dir)) {
            return;
        }
        Path archive = dir.resolve(format.fileName(ARCHIVE));
        List<Path> recorded;
        try (Stream<Path> files = Files.list(dir)) {
            recorded = files.filter(p -> p.getFileName().toString().startsWith(RECORDED) && format.isArchive(p))
                    .sorted(Comparator.comparing(Path::toString)).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            for (Path f : recorded) {
                if (!Files.exists(archive) && accepts(module, f)) {
                    Files.move(f, archive, StandardCopyOption.ATOMIC_MOVE);
                } else {
                    Files.deleteIfExists(f);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private boolean accepts(String module, Path archive) {
        List<String> check = new ArrayList<>();
        check.add(java.java());
        check.addAll(format.check(archive));
        check.addAll(List.of("-cp", jar(module).toString(), "-version"));
        return run(check);
    }

    private Path dir(String module) {
        return homes.apply(module).resolve("app-" + java.version());
    }

    private static boolean run(List<String> command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
