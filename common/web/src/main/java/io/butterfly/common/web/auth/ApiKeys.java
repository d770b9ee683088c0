package io.butterfly.common.web.auth;

import io.butterfly.common.hash.Sha256;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The API keys a service accepts, read from files (one key a line; blank lines and {@code #} comments skipped), so
 * that Kubernetes can mount them from a Secret. Only their SHA-256 digests are kept, and a presented key is compared
 * with every one of them by {@link MessageDigest#isEqual} (constant time): how long a check takes says nothing about
 * how much of a key was right, nor which key matched.
 */
public final class ApiKeys {

    /** What a key may do: an admin key may also do what a user key may. */
    public enum Role { NONE, USER, ADMIN }

    /** The bytes of a key's digest that name it ({@link ApiKeyPrincipal#keyId}). */
    private static final int KEY_ID_BYTES = 8;

    /** No keys: every endpoint is open. */
    public static final ApiKeys NONE = new ApiKeys(List.of(), List.of());

    private final List<byte[]> users;
    private final List<byte[]> admins;

    private ApiKeys(List<byte[]> users, List<byte[]> admins) {
        this.users = users;
        this.admins = admins;
    }

    /**
     * The keys of {@code userKeys} and {@code adminKeys} (either may be null: no keys of that role). A file that is
     * named but holds no key is refused: a Secret mounted empty must not leave the API open.
     *
     * @throws IllegalArgumentException naming the file that cannot be read or holds no key
     */
    public static ApiKeys load(Path userKeys, Path adminKeys) {
        return new ApiKeys(digests(userKeys), digests(adminKeys));
    }

    /** Whether any key is set: otherwise nothing is checked. */
    public boolean enabled() {
        return !users.isEmpty() || !admins.isEmpty();
    }

    /** The role of a presented key: {@link Role#NONE} for a key that is not one of them. */
    public Role roleOf(String presented) {
        return principalOf(presented).role();
    }

    /** The presented key as a principal: its id and role ({@link Role#NONE} for a key that is not one of them). */
    public ApiKeyPrincipal principalOf(String presented) {
        byte[] digest = sha256(presented);
        boolean admin = matchesAny(digest, admins);
        boolean user = matchesAny(digest, users);
        return new ApiKeyPrincipal(HexFormat.of().formatHex(digest, 0, KEY_ID_BYTES),
                admin ? Role.ADMIN : user ? Role.USER : Role.NONE);
    }

    /** Compares with every digest, without stopping at the first match. */
    private static boolean matchesAny(byte[] digest, List<byte[]> keys) {
        boolean match = false;
        for (byte[] key : keys) {
            match |= MessageDigest.isEqual(digest, key);
        }
        return match;
    }

    private static List<byte[]> digests(Path file) {
        if (file == null) {
            return List.of();
        }
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException | UncheckedIOException e) {
            throw new IllegalArgumentException("cannot read the API keys file " + file + ": " + e.getMessage(), e);
        }
        List<byte[]> out = new ArrayList<>();
        for (String line : lines) {
            String key = line.strip();
            if (!key.isEmpty() && !key.startsWith("#")) {
                out.add(sha256(key));
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("the API keys file " + file + " holds no key");
        }
        return List.copyOf(out);
    }

    private static byte[] sha256(String key) {
        return Sha256.digest(key.getBytes(StandardCharsets.UTF_8));
    }
}
