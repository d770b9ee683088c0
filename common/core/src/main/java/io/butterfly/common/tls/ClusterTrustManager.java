package io.butterfly.common.tls;

import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * Trusts a peer as the cluster does: its chain leads to the cluster CA (the JDK's PKIX checks: signatures, validity
 * dates, key usage and, on a client, the server's host name), the handshake negotiated TLS 1.3, and, where one is
 * required, the certificate names that role (Raft: coordinators only).
 *
 * <p>TLS 1.3 is checked here because grpc-java's TLS credentials and Ratis' TLS settings do not let one choose the
 * protocol versions: whatever the two ends offer, a handshake that settled on anything older fails here.
 */
final class ClusterTrustManager extends X509ExtendedTrustManager {

    static final String PROTOCOL = "TLSv1.3";

    private final X509ExtendedTrustManager pkix;
    private final NodeRole requiredRole;

    /** @param requiredRole the role every peer must have; null for any */
    ClusterTrustManager(X509ExtendedTrustManager pkix, NodeRole requiredRole) {
        this.pkix = pkix;
        this.requiredRole = requiredRole;
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
        pkix.checkClientTrusted(chain, authType, engine);
        check(chain, engine.getHandshakeSession());
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
        pkix.checkServerTrusted(chain, authType, engine);
        check(chain, engine.getHandshakeSession());
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
        pkix.checkClientTrusted(chain, authType, socket);
        check(chain, socket instanceof SSLSocket ssl ? ssl.getHandshakeSession() : null);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
        pkix.checkServerTrusted(chain, authType, socket);
        check(chain, socket instanceof SSLSocket ssl ? ssl.getHandshakeSession() : null);
    }

    /** Without a connection the protocol cannot be seen: such a check refuses. */
    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        pkix.checkClientTrusted(chain, authType);
        check(chain, null);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        pkix.checkServerTrusted(chain, authType);
        check(chain, null);
    }

    @Override
    public X509Certificate[] getAcceptedIssuers() {
        return pkix.getAcceptedIssuers();
    }

    private void check(X509Certificate[] chain, SSLSession handshake) throws CertificateException {
        String protocol = handshake == null ? null : handshake.getProtocol();
        if (!PROTOCOL.equals(protocol)) {
            throw new CertificateException("the handshake negotiated " + protocol + "; the cluster speaks " + PROTOCOL + " only");
        }
        if (requiredRole != null) {
            PeerIdentity peer = PeerIdentity.of(chain[0]).orElseThrow(() -> new CertificateException(
                    "the peer's certificate names no node; only a " + requiredRole.label() + " may connect here"));
            if (peer.role() != requiredRole) {
                throw new CertificateException("the peer is " + peer + "; only a " + requiredRole.label() + " may connect here");
            }
        }
    }
}
