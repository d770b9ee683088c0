package io.butterfly.common.hash;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** SHA-256 helpers; hex is lowercase throughout Butterfly. */
public final class Sha256 {

    private static final HexFormat HEX = HexFormat.of();
    /**
     * Never updated, only cloned: a provider look-up ({@code getInstance}) costs more than hashing a pipeline
     * step's activations, and a step makes two.
     */
    private static final MessageDigest PROTOTYPE = lookUp();

    private Sha256() {
    }

    public static MessageDigest newDigest() {
        try {
            return (MessageDigest) PROTOTYPE.clone();
        } catch (CloneNotSupportedException e) {
            return lookUp();
        }
    }

    private static MessageDigest lookUp() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK always has SHA-256", e);
        }
    }

    public static byte[] digest(byte[] data) {
        return newDigest().digest(data);
    }

    public static byte[] digest(ByteBuffer data) {
        MessageDigest d = newDigest();
        d.update(data.duplicate());
        return d.digest();
    }

    public static String hex(byte[] data) {
        return HEX.formatHex(digest(data));
    }

    public static String toHex(byte[] digest) {
        return HEX.formatHex(digest);
    }

    public static byte[] fromHex(String hex) {
        return HEX.parseHex(hex);
    }

    public static String hexOfFile(Path file) throws IOException {
        return HEX.formatHex(digestOfFile(file).digest());
    }

    /** A digest that has consumed the file's bytes (more may be added before {@code digest()}). */
    public static MessageDigest digestOfFile(Path file) throws IOException {
        MessageDigest d = newDigest();
        update(d, file);
        return d;
    }

    /** Adds the file's bytes to {@code d}, 1 MiB at a time. */
    public static void update(MessageDigest d, Path file) throws IOException {
        byte[] buf = new byte[1 << 20];
        try (InputStream in = Files.newInputStream(file)) {
            int n;
            while ((n = in.read(buf)) > 0) {
                d.update(buf, 0, n);
            }
        }
    }

    /**
     * Hashes {@code megabytes} MiB of zeros, 1 MiB per update, so the JIT compiles the multi-block SHA-256 path
     * (the one using the CPU's SHA instructions) now, not when a worker's first shard arrives. As C1 code a digest
     * runs about five times slower (200 MB in 1.27 s against 0.26 s), and a worker that met its first shard with a
     * busy compiler queue got the compiled version 850 ms after it began hashing.
     */
    public static void warmUp(int megabytes) {
        MessageDigest d = newDigest();
        byte[] buf = new byte[1 << 20];
        for (int i = 0; i < megabytes; i++) {
            d.update(buf);
        }
        d.digest();
    }
}
