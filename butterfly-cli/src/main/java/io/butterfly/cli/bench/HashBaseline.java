package io.butterfly.cli.bench;

import io.butterfly.common.hash.Sha256;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.List;

/**
 * {@code bench-load}'s second baseline: the files read once and hashed as one SHA-256 stream (like {@code cat FILES |
 * sha256sum}) on one thread, with the JDK's SHA-256 as the workers run it: JIT-compiled, on the CPU's SHA
 * instructions where it has them. Coreutils' {@code sha256sum} has no such path and reads and hashes 3-4 times
 * slower here (about 0.4 GB/s against 1.5), so a ratio against it alone flatters the bootstrap.
 *
 * <p>Prints {@code <ms> <sha256 hex>}: the time covers reading and hashing, not the JIT warm-up before it. It runs in a
 * JVM of its own with C2 (bench-load starts it with the services' options; the tools stop at C1): as C1 code the
 * digest runs about five times slower.
 */
public final class HashBaseline {

    private static final int WARM_UP_MIB = 64;

    private HashBaseline() {
    }

    public static void main(String[] args) {
        System.exit(run(List.of(args), System.out, System.err));
    }

    static int run(List<String> files, PrintStream out, PrintStream err) {
        if (files.isEmpty()) {
            err.println("usage: HashBaseline FILE...");
            return 2;
        }
        try {
            Sha256.warmUp(WARM_UP_MIB);
            long start = System.nanoTime();
            byte[] digest = hashInOrder(files.stream().map(Path::of).toList());
            long ms = (System.nanoTime() - start) / 1_000_000;
            out.println(ms + " " + Sha256.toHex(digest));
            return 0;
        } catch (IOException e) {
            err.println("error: " + e);
            return 1;
        }
    }

    /** The SHA-256 of the files' bytes, concatenated in the given order. */
    static byte[] hashInOrder(List<Path> files) throws IOException {
        MessageDigest d = Sha256.newDigest();
        for (Path f : files) {
            Sha256.update(d, f);
        }
        return d.digest();
    }
}
