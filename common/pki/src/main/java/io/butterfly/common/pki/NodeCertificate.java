package io.butterfly.common.pki;

import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.common.tls.ClusterTls;
import java.io.IOException;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;

/**
 * A node's certificate from the cluster CA, its private key, and the CA's certificate: what a service needs for
 * mutual TLS, written as the three files of a TLS directory ({@code butterfly.tls.dir}).
 */
public record NodeCertificate(PeerIdentity identity, X509Certificate certificate, PrivateKey key, X509Certificate ca) {

    public static final String CA_FILE = "ca.crt";
    public static final String CERTIFICATE_FILE = "node.crt";
    public static final String KEY_FILE = "node.key";

    /** Writes {@code ca.crt}, {@code node.crt} and {@code node.key} (0600) into {@code dir}. */
    public void writeTo(Path dir) throws IOException {
        Pem.writeCertificates(dir.resolve(CA_FILE), List.of(ca));
        Pem.writeCertificates(dir.resolve(CERTIFICATE_FILE), List.of(certificate));
        Pem.writePrivateKey(dir.resolve(KEY_FILE), key);
    }

    /** The node's side of mutual TLS with these, as a service loads it. */
    public ClusterTls tls() {
        return ClusterTls.of(key, List.of(certificate), List.of(ca));
    }
}
