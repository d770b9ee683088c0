package io.butterfly.common.crypto;

import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code butterfly keygen --out DIR}: writes a new Ed25519 identity ({@code identity.key}, PKCS#8, owner-only;
 * {@code identity.pub}, hex) and prints its public key. For a registry publisher key provisioned ahead of the
 * registry's first start (a Kubernetes Secret), so that coordinators and workers can be configured to trust
 * it. Never overwrites an existing key.
 */
public final class KeygenCommand {

    public static final String USAGE = "usage: KeygenCommand --out DIR   (DIR must not hold an identity.key yet)";

    private KeygenCommand() {
    }

    public static void main(String[] args) {
        int code = run(args, System.out, System.err);
        if (code != 0) {
            System.exit(code);
        }
    }

    /** Runs the command; returns the process exit code (0 ok, 1 I/O failure, 2 bad arguments). */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length != 2 || !args[0].equals("--out") || args[1].isBlank()) {
            err.println(USAGE);
            return 2;
        }
        Path dir = Path.of(args[1]);
        if (Files.exists(dir.resolve(NodeIdentity.PRIVATE_FILE))) {
            err.println("keygen: " + dir.resolve(NodeIdentity.PRIVATE_FILE) + " exists already; not overwriting it");
            return 2;
        }
        try {
            out.println(NodeIdentity.loadOrCreate(dir).publicKeyHex());
            return 0;
        } catch (UncheckedIOException e) {
            err.println("keygen: " + e.getMessage() + ": " + e.getCause().getMessage());
            return 1;
        }
    }
}
