package io.butterfly.common.crypto;

import java.io.IOException;
import java.io.UncheckedIOException;
import io.butterfly.common.fs.DurableFiles;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.PublicKey;

/**
 * A node's (or publisher's) long-lived Ed25519 key pair, generated on first start and kept in its
 * data directory as {@code identity.key} (PKCS#8, owner-only) and {@code identity.pub} (raw key, hex).
 */
public final class NodeIdentity {

    public static final String PRIVATE_FILE = "identity.key";
    public static final String PUBLIC_FILE = "identity.pub";

    private final PrivateKey privateKey;
    private final byte[] publicKey;

    private NodeIdentity(PrivateKey privateKey, byte[] publicKey) {
        this.privateKey = privateKey;
        this.publicKey = publicKey;
    }

    /**
     * Loads the identity kept in {@code directory}, creating it there on first use. The pair is written so that a
     * crash leaves either no identity or a whole one: each file durably and atomically ({@link DurableFiles}), the
     * public key first, and the private key last, whose presence says the pair is complete (a public key alone, left
     * by a crash between the two, is replaced by a new pair).
     */
    public static NodeIdentity loadOrCreate(Path directory) {
        try {
            Files.createDirectories(directory);
            Path key = directory.resolve(PRIVATE_FILE);
            if (Files.exists(key)) {
                return load(directory);
            }
            KeyPair pair = Ed25519.generate();
            byte[] raw = Ed25519.raw(pair.getPublic());
            DurableFiles.write(directory.resolve(PUBLIC_FILE), (Ed25519.hex(raw) + "\n").getBytes(StandardCharsets.US_ASCII),
                    false);
            DurableFiles.write(key, pair.getPrivate().getEncoded(), true);
            return new NodeIdentity(pair.getPrivate(), raw);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot keep the node identity in " + directory, e);
        }
    }

    /** A fresh identity held only in memory (tests, one-off tools). */
    public static NodeIdentity ephemeral() {
        KeyPair pair = Ed25519.generate();
        return new NodeIdentity(pair.getPrivate(), Ed25519.raw(pair.getPublic()));
    }

    private static NodeIdentity load(Path directory) throws IOException {
        try {
            PrivateKey key = Ed25519.privateKey(Files.readAllBytes(directory.resolve(PRIVATE_FILE)));
            byte[] raw = Ed25519.fromHex(Files.readString(directory.resolve(PUBLIC_FILE)));
            NodeIdentity identity = new NodeIdentity(key, raw);
            byte[] probe = "identity-check".getBytes();
            if (!Ed25519.verify(raw, probe, identity.sign(probe))) {
                throw new IOException("identity.pub does not belong to identity.key in " + directory);
            }
            return identity;
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            throw new IOException("corrupt node identity in " + directory + ": " + e.getMessage(), e);
        }
    }


    public byte[] sign(byte[] message) {
        return Ed25519.sign(privateKey, message);
    }

    /** The raw 32-byte public key. */
    public byte[] publicKey() {
        return publicKey.clone();
    }

    public String publicKeyHex() {
        return Ed25519.hex(publicKey);
    }

    public PublicKey jdkPublicKey() {
        return Ed25519.publicKey(publicKey);
    }
}
