package io.butterfly.common.pki;

import io.butterfly.common.identity.PeerIdentity;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A cluster's certificate authority: an ECDSA P-256 key and a self-signed certificate that may sign node
 * certificates only (path length 0). Each node certificate names one identity ({@link PeerIdentity}) plus the host
 * names and addresses peers dial it at, for both ends of a connection (server and client authentication).
 */
public final class ClusterCa {

    public static final String CERTIFICATE_FILE = "ca.crt";
    public static final String KEY_FILE = "ca.key";
    private static final String KEY_ALGORITHM = "EC";
    private static final String SIGNATURE = "SHA256withECDSA";
    private static final SecureRandom RANDOM = new SecureRandom();

    private final X509Certificate certificate;
    private final PrivateKey key;

    private ClusterCa(X509Certificate certificate, PrivateKey key) {
        this.certificate = certificate;
        this.key = key;
    }

    /** A new CA, valid from now for {@code validity}. */
    public static ClusterCa create(String name, Duration validity) {
        KeyPair pair = generateKeyPair();
        X500Name subject = new X500Name("CN=" + name);
        Instant now = Instant.now();
        try {
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(subject, serial(),
                    Date.from(now.minus(Duration.ofMinutes(5))), Date.from(now.plus(validity)), subject, pair.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                    .addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(pair.getPublic()));
            return new ClusterCa(sign(b, pair.getPrivate()), pair.getPrivate());
        } catch (GeneralSecurityException | CertIOException e) {
            throw new IllegalStateException("cannot create a CA certificate", e);
        }
    }

    /** The CA kept in {@code dir} ({@code ca.crt}, {@code ca.key}). */
    public static ClusterCa load(Path dir) throws IOException {
        return new ClusterCa(Pem.readCertificates(dir.resolve(CERTIFICATE_FILE)).get(0),
                Pem.readPrivateKey(dir.resolve(KEY_FILE), KEY_ALGORITHM));
    }

    /** The CA kept in {@code dir}, created there (valid for {@code validity}) if there is none. */
    public static ClusterCa loadOrCreate(Path dir, String name, Duration validity) throws IOException {
        if (Files.exists(dir.resolve(KEY_FILE)) && Files.exists(dir.resolve(CERTIFICATE_FILE))) {
            return load(dir);
        }
        ClusterCa ca = create(name, validity);
        ca.writeTo(dir);
        return ca;
    }

    /** Writes {@code ca.crt} and {@code ca.key} (0600) into {@code dir}. */
    public void writeTo(Path dir) throws IOException {
        Pem.writePrivateKey(dir.resolve(KEY_FILE), key);
        Pem.writeCertificates(dir.resolve(CERTIFICATE_FILE), List.of(certificate));
    }

    public X509Certificate certificate() {
        return certificate;
    }

    /** A certificate for {@code identity}, valid from now for {@code validity}. */
    public NodeCertificate issue(PeerIdentity identity, List<String> hosts, Duration validity) {
        Instant now = Instant.now();
        return issue(identity, hosts, now.minus(Duration.ofMinutes(5)), now.plus(validity));
    }

    /**
     * A certificate for {@code identity}, valid from {@code notBefore} to {@code notAfter} (tests issue expired ones).
     *
     * @param hosts the names (DNS) and addresses (IP literals) the node is dialled at
     */
    public NodeCertificate issue(PeerIdentity identity, List<String> hosts, Instant notBefore, Instant notAfter) {
        KeyPair pair = generateKeyPair();
        List<GeneralName> names = new ArrayList<>();
        names.add(new GeneralName(GeneralName.dNSName, identity.dnsName()));
        for (String host : hosts) {
            names.add(isAddress(host) ? new GeneralName(GeneralName.iPAddress, host) : new GeneralName(GeneralName.dNSName, host));
        }
        try {
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder b = new JcaX509v3CertificateBuilder(certificate, serial(), Date.from(notBefore),
                    Date.from(notAfter), new X500Name("CN=" + identity.nodeId()), pair.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature))
                    .addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(
                            new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}))
                    .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names.toArray(GeneralName[]::new)))
                    .addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(pair.getPublic()))
                    .addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(certificate));
            return new NodeCertificate(identity, sign(b, key), pair.getPrivate(), certificate);
        } catch (GeneralSecurityException | CertIOException e) {
            throw new IllegalStateException("cannot issue a certificate for " + identity, e);
        }
    }

    /** Whether {@code cert} was signed by this CA's key. */
    public boolean issued(X509Certificate cert) {
        try {
            cert.verify(certificate.getPublicKey());
            return cert.getIssuerX500Principal().equals(certificate.getSubjectX500Principal());
        } catch (GeneralSecurityException e) {
            return false;
        }
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey signer) throws GeneralSecurityException {
        try {
            return new JcaX509CertificateConverter().getCertificate(builder.build(new JcaContentSignerBuilder(SIGNATURE).build(signer)));
        } catch (OperatorCreationException e) {
            throw new GeneralSecurityException(e);
        }
    }

    private static KeyPair generateKeyPair() {
        try {
            KeyPairGenerator gen = KeyPairGenerator.getInstance(KEY_ALGORITHM);
            gen.initialize(new ECGenParameterSpec("secp256r1"));
            return gen.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("no ECDSA P-256 key generator in this JDK", e);
        }
    }

    private static BigInteger serial() {
        return new BigInteger(127, RANDOM);
    }

    private static boolean isAddress(String host) {
        return host.matches("[0-9.]+") || host.contains(":");
    }
}
