package io.butterfly.cli.home;

import io.butterfly.common.fs.DurableFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;

/**
 * The API keys {@code ./butterfly up} makes on first use, as it makes the cluster CA (docs/security.md): a user key
 * ({@value #USER_FILE}: may generate) and an admin key ({@value #ADMIN_FILE}: may also change the cluster and import
 * models), each a file of one key, readable by its owner only, in a directory only its owner may enter. Kept across
 * runs; delete a file to have a new key made. The client commands send the user key by themselves.
 */
public final class ClusterApiKeys {

    public static final String USER_FILE = "user.key";
    public static final String ADMIN_FILE = "admin.key";
    private static final SecureRandom RANDOM = new SecureRandom();

    /** The key files, made where missing. */
    public record KeyFiles(Path userKeys, Path adminKeys) {
    }

    private ClusterApiKeys() {
    }

    /** Makes the keys under {@code dir} that are not there yet (written durably, 0600); answers both files. */
    public static KeyFiles ensure(Path dir) {
        try {
            Files.createDirectories(dir);
            try {
                Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
            } catch (UnsupportedOperationException notPosix) {
                // the file system's own access rules apply
            }
            Path user = dir.resolve(USER_FILE);
            Path admin = dir.resolve(ADMIN_FILE);
            for (Path file : List.of(user, admin)) {
                if (readKey(file) == null) {
                    String prefix = file.equals(admin) ? "sk-admin-" : "sk-";
                    DurableFiles.write(file, (prefix + newSecret() + "\n").getBytes(StandardCharsets.US_ASCII), true);
                }
            }
            return new KeyFiles(user, admin);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot keep the cluster's API keys in " + dir, e);
        }
    }

    /** The first key in {@code file} (a file of keys, one a line, {@code #} comments), or null if none is there. */
    public static String readKey(Path file) {
        try {
            if (!Files.isRegularFile(file)) {
                return null;
            }
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                String key = line.strip();
                if (!key.isEmpty() && !key.startsWith("#")) {
                    return key;
                }
            }
            return null;
        } catch (IOException e) {
            return null; // unreadable (another user's cluster): the commands go without a key
        }
    }

    /** 24 random bytes, in hex: 192 bits, beyond guessing. */
    private static String newSecret() {
        byte[] bytes = new byte[24];
        RANDOM.nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
