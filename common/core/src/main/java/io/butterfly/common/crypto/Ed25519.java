package io.butterfly.common.crypto;

import java.security.GeneralSecurityException;
import java.security.InvalidKeyException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.SignatureException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * Ed25519 with the JDK's own provider. Public keys travel and are trusted as their raw 32 bytes
 * (hex in configuration, bytes in Protobuf), the form every other Ed25519 implementation uses.
 */
public final class Ed25519 {

    public static final int PUBLIC_KEY_BYTES = 32;
    public static final int SIGNATURE_BYTES = 64;
    /** DER prefix of an X.509 SubjectPublicKeyInfo for Ed25519 (OID 1.3.101.112); the raw key follows. */
    private static final byte[] X509_PREFIX = HexFormat.of().parseHex("302a300506032b6570032100");
    private static final HexFormat HEX = HexFormat.of();

    private Ed25519() {
    }

    public static KeyPair generate() {
        try {
            return KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK (15+) always has Ed25519", e);
        }
    }

    public static byte[] sign(PrivateKey key, byte[] message) {
        try {
            Signature s = Signature.getInstance("Ed25519");
            s.initSign(key);
            s.update(message);
            return s.sign();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("Ed25519 signing failed", e);
        }
    }

    /** True only for a well-formed signature by {@code key} over exactly {@code message}; never throws on bad input. */
    public static boolean verify(byte[] rawPublicKey, byte[] message, byte[] signature) {
        if (rawPublicKey == null || rawPublicKey.length != PUBLIC_KEY_BYTES
                || signature == null || signature.length != SIGNATURE_BYTES) {
            return false;
        }
        try {
            Signature s = Signature.getInstance("Ed25519");
            s.initVerify(publicKey(rawPublicKey));
            s.update(message);
            return s.verify(signature);
        } catch (SignatureException | InvalidKeyException | IllegalArgumentException e) {
            return false;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("Ed25519 verification unavailable", e);
        }
    }

    /** The raw 32-byte form of a JDK Ed25519 public key. */
    public static byte[] raw(PublicKey key) {
        byte[] der = key.getEncoded();
        if (der.length != X509_PREFIX.length + PUBLIC_KEY_BYTES
                || !Arrays.equals(der, 0, X509_PREFIX.length, X509_PREFIX, 0, X509_PREFIX.length)) {
            throw new IllegalArgumentException("not an Ed25519 public key: " + key.getAlgorithm());
        }
        return Arrays.copyOfRange(der, X509_PREFIX.length, der.length);
    }

    public static PublicKey publicKey(byte[] raw) {
        if (raw.length != PUBLIC_KEY_BYTES) {
            throw new IllegalArgumentException("an Ed25519 public key has 32 bytes, not " + raw.length);
        }
        byte[] der = Arrays.copyOf(X509_PREFIX, X509_PREFIX.length + PUBLIC_KEY_BYTES);
        System.arraycopy(raw, 0, der, X509_PREFIX.length, PUBLIC_KEY_BYTES);
        try {
            return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(der));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("invalid Ed25519 public key", e);
        }
    }

    static PrivateKey privateKey(byte[] pkcs8) throws GeneralSecurityException {
        return KeyFactory.getInstance("Ed25519").generatePrivate(new PKCS8EncodedKeySpec(pkcs8));
    }

    public static String hex(byte[] raw) {
        return HEX.formatHex(raw);
    }

    public static byte[] fromHex(String hex) {
        return HEX.parseHex(hex.trim());
    }
}
