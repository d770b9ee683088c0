package io.butterfly.common.pki;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import io.butterfly.common.fs.DurableFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.List;

/**
 * PEM files as the services read them (Spring Boot's SSL bundles): certificates, and private keys in PKCS#8 written
 * readable by their owner only.
 */
public final class Pem {

    private static final Base64.Encoder BASE64 = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII));

    private Pem() {
    }

    public static void writeCertificates(Path file, List<X509Certificate> certificates) throws IOException {
        StringBuilder pem = new StringBuilder();
        for (X509Certificate c : certificates) {
            try {
                pem.append(block("CERTIFICATE", c.getEncoded()));
            } catch (CertificateException e) {
                throw new IOException("cannot encode a certificate", e);
            }
        }
        write(file, pem.toString(), false);
    }

    /** Written to a file that is readable and writable by its owner only (0600) before the key goes in. */
    public static void writePrivateKey(Path file, PrivateKey key) throws IOException {
        write(file, block("PRIVATE KEY", key.getEncoded()), true);
    }

    public static List<X509Certificate> readCertificates(Path file) throws IOException {
        try (var in = new ByteArrayInputStream(Files.readAllBytes(file))) {
            return CertificateFactory.getInstance("X.509").generateCertificates(in).stream()
                    .map(X509Certificate.class::cast).toList();
        } catch (CertificateException e) {
            throw new IOException(file + " holds no readable certificate: " + e.getMessage(), e);
        }
    }

    /** A PKCS#8 key of {@code algorithm} ("EC"), as {@link #writePrivateKey} writes it. */
    public static PrivateKey readPrivateKey(Path file, String algorithm) throws IOException {
        String text = Files.readString(file, StandardCharsets.US_ASCII);
        int begin = text.indexOf("-----BEGIN PRIVATE KEY-----");
        int end = text.indexOf("-----END PRIVATE KEY-----");
        if (begin < 0 || end < begin) {
            throw new IOException(file + " holds no PKCS#8 private key");
        }
        byte[] der = Base64.getMimeDecoder().decode(text.substring(begin + 27, end));
        try {
            return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
        } catch (GeneralSecurityException e) {
            throw new IOException(file + " holds no " + algorithm + " private key: " + e.getMessage(), e);
        }
    }

    private static String block(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n" + BASE64.encodeToString(der) + "\n-----END " + type + "-----\n";
    }

    /** Durably and atomically: a crash leaves the old file or the new one, never a torn key ({@link DurableFiles}). */
    private static void write(Path file, String content, boolean ownerOnly) throws IOException {
        DurableFiles.write(file, content.getBytes(StandardCharsets.US_ASCII), ownerOnly);
    }

}
