package io.butterfly.common.fs;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * Files written so that a crash or a power cut leaves either the old content or the new, never a torn or empty file,
 * and a rename that survives: the content goes to a temporary file in the same directory, which is forced to disk
 * (fsync), renamed over the target atomically, and the directory is forced too (the rename itself is directory data:
 * without it, a power cut may forget it).
 */
public final class DurableFiles {

    private DurableFiles() {
    }

    /**
     * Replaces {@code file} with {@code content}, durably and atomically; {@code ownerOnly}: readable by its owner only
     * (0600) from its first byte on.
     */
    public static void write(Path file, byte[] content, boolean ownerOnly) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, "." + file.getFileName(), ".tmp");
        try {
            if (ownerOnly) {
                restrictToOwner(tmp);
            }
            try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer buffer = ByteBuffer.wrap(content);
                while (buffer.hasRemaining()) {
                    out.write(buffer);
                }
                out.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            syncDirectory(dir);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /**
     * Forces {@code dir}'s entries to disk: after a rename or a new file in it, so that the change survives a power
     * cut. A file system that cannot open a directory for it (not POSIX) is left to its own guarantees.
     */
    public static void syncDirectory(Path dir) throws IOException {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException e) {
            if (!Files.isDirectory(dir)) {
                throw e;
            }
            // Some platforms cannot open or force a directory (Windows): nothing more can be done there.
        }
    }

    /** 0600 where the file system has POSIX permissions. */
    public static void restrictToOwner(Path file) throws IOException {
        try {
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        } catch (UnsupportedOperationException notPosix) {
            // a file system without POSIX permissions: its own access rules apply
        }
    }

    /** Whether {@code e} (or a cause) says the disk is full: reported as such, not as the operation's failure. */
    public static boolean diskFull(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            String message = c.getMessage();
            if (message != null && (message.contains("No space left on device") || message.contains("Disk quota exceeded")
                    || message.contains("There is not enough space on the disk"))) {
                return true;
            }
        }
        return false;
    }
}
