package io.butterfly.common.tls;

import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * This node's side of mutual TLS: its certificate and key, which it shows to every peer, and the cluster CA whose
 * certificates it trusts ({@link ClusterTrustManager}). Or plaintext: the explicit insecure switch
 * ({@code butterfly.tls.enabled=false}), where nothing is encrypted and no caller is known.
 */
public final class ClusterTls {

    /** TLS off. */
    public static final ClusterTls PLAINTEXT = new ClusterTls(null, null, null, null, null);
    /** The password of the in-memory key store (it never leaves this process). */
    public static final String KEY_PASSWORD = "";

    private final KeyStore keyStore;
    private final KeyStore trustStore;
    private final KeyManagerFactory keys;
    private final X509ExtendedTrustManager pkix;
    private final X509Certificate certificate;

    private ClusterTls(KeyStore keyStore, KeyStore trustStore, KeyManagerFactory keys, X509ExtendedTrustManager pkix,
                       X509Certificate certificate) {
        this.keyStore = keyStore;
        this.trustStore = trustStore;
        this.keys = keys;
        this.pkix = pkix;
        this.certificate = certificate;
    }

    /**
     * @param key     this node's private key
     * @param chain   its certificate first, then any intermediates
     * @param trusted the cluster CA's certificate(s)
     */
    public static ClusterTls of(PrivateKey key, List<X509Certificate> chain, List<X509Certificate> trusted) {
        if (chain.isEmpty() || trusted.isEmpty()) {
            throw new IllegalArgumentException("mutual TLS needs this node's certificate and the cluster CA's");
        }
        try {
            KeyStore keyStore = KeyStore.getInstance("PKCS12");
            keyStore.load(null, null);
            keyStore.setKeyEntry("node", key, KEY_PASSWORD.toCharArray(), chain.toArray(Certificate[]::new));
            KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(keyStore, KEY_PASSWORD.toCharArray());

            KeyStore trustStore = KeyStore.getInstance("PKCS12");
            trustStore.load(null, null);
            for (int i = 0; i < trusted.size(); i++) {
                trustStore.setCertificateEntry("ca-" + i, trusted.get(i));
            }
            TrustManagerFactory pkix = TrustManagerFactory.getInstance("PKIX");
            pkix.init(trustStore);
            return new ClusterTls(keyStore, trustStore, keys, (X509ExtendedTrustManager) pkix.getTrustManagers()[0],
                    chain.get(0));
        } catch (GeneralSecurityException | java.io.IOException e) {
            throw new IllegalArgumentException("unusable TLS key or certificates: " + e.getMessage(), e);
        }
    }

    public boolean enabled() {
        return keys != null;
    }

    /** This node's certificate and key. */
    public KeyManagerFactory keyManagers() {
        requireEnabled();
        return keys;
    }

    /** This node's key and certificate as a key store (key password {@link #KEY_PASSWORD}), for APIs that take one. */
    public KeyStore keyStore() {
        requireEnabled();
        return keyStore;
    }

    /** The cluster CA as a trust store. */
    public KeyStore trustStore() {
        requireEnabled();
        return trustStore;
    }

    /** Trusts any node the cluster CA certified. */
    public TrustManagerFactory trustManagers() {
        return new FixedTrustManagerFactory(trustManager(null));
    }

    /** The trust manager for a link between {@code role}s only (every peer must be one). */
    public TrustManager trustManager(NodeRole role) {
        requireEnabled();
        return new ClusterTrustManager(pkix, role);
    }

    /** This node's own certificate. */
    public X509Certificate certificate() {
        requireEnabled();
        return certificate;
    }

    /** Who this node's certificate says it is. */
    public Optional<PeerIdentity> identity() {
        return enabled() ? PeerIdentity.of(certificate) : Optional.empty();
    }

    private void requireEnabled() {
        if (!enabled()) {
            throw new IllegalStateException("TLS is off (butterfly.tls.enabled=false)");
        }
    }

    @Override
    public String toString() {
        return !enabled() ? "plaintext" : "mutual TLS as " + identity().map(PeerIdentity::toString).orElse("an unnamed node")
                + " (certificate valid until " + certificate.getNotAfter().toInstant() + ", issued by "
                + certificate.getIssuerX500Principal().getName() + ")";
    }
}
