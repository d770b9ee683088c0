package io.butterfly.testsupport;

import io.butterfly.common.fs.DurableFiles;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A real file system that fills up: a 64 KiB tmpfs mounted for a test (needs root and {@code mount}; the test is
 * skipped otherwise). {@link #fill} writes until the disk is full, so the next write fails with the operating
 * system's own ENOSPC ("No space left on device").
 */
public final class TinyDisk implements AutoCloseable {

    private final Path dir;

    private TinyDisk(Path dir) {
        this.dir = dir;
    }

    public static TinyDisk mount(Path parent) throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "mounting a tmpfs needs root");
        Path dir = Files.createDirectories(parent.resolve("tiny-disk"));
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir.toString())
                .redirectErrorStream(true).start();
        Assumptions.assumeTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0, "cannot mount a tmpfs here");
        return new TinyDisk(dir);
    }

    public Path dir() {
        return dir;
    }

    /** Writes a filler file until the disk is full. */
    public void fill() throws IOException {
        try (OutputStream out = Files.newOutputStream(dir.resolve("filler"))) {
            byte[] block = new byte[1024];
            while (true) {
                out.write(block);
                out.flush();
            }
        } catch (IOException full) {
            if (!DurableFiles.diskFull(full)) {
                throw full;
            }
        }
    }

    /** Frees the filler's space. */
    public void free() throws IOException {
        Files.deleteIfExists(dir.resolve("filler"));
    }

    @Override
    public void close() throws Exception {
        new ProcessBuilder("umount", dir.toString()).start().waitFor(10, TimeUnit.SECONDS);
    }
}
