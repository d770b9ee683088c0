package io.butterfly.common.pki;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.common.tls.ClusterTls;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import org.junit.jupiter.api.Test;

/**
 * Real TLS handshakes over loopback between two {@link ClusterTls}: what the cluster's trust manager lets through and
 * what it refuses (another CA, an expired certificate, TLS 1.2, a host name the certificate lacks, a role Raft does
 * not take).
 */
class ClusterTlsTest {

    private static final ClusterCa CA = ClusterCa.create("test CA", Duration.ofDays(30));
    private static final List<String> LOOPBACK = List.of("127.0.0.1", "localhost");
    private static final ClusterTls COORDINATOR = CA.issue(new PeerIdentity(NodeRole.COORDINATOR, "coordinator-0"),
            LOOPBACK, Duration.ofDays(1)).tls();
    private static final ClusterTls WORKER = CA.issue(new PeerIdentity(NodeRole.WORKER, "worker-0"), LOOPBACK,
            Duration.ofDays(1)).tls();

    /** What the server saw of a client: its certificate, or why it refused it. */
    private record Outcome(X509Certificate client, Exception refusal) {
    }

    @Test
    void peersOfOneCaShakeHandsOverTls13AndTheServerSeesWhoCalled() throws Exception {
        Outcome o = handshake(COORDINATOR, null, WORKER, "127.0.0.1", null);
        assertThat(o.refusal()).isNull();
        assertThat(PeerIdentity.of(o.client())).contains(new PeerIdentity(NodeRole.WORKER, "worker-0"));
    }

    @Test
    void aClientOfAnotherCaOrWithAnExpiredCertificateIsRefused() throws Exception {
        ClusterTls stranger = ClusterCa.create("another CA", Duration.ofDays(30))
                .issue(new PeerIdentity(NodeRole.WORKER, "worker-0"), LOOPBACK, Duration.ofDays(1)).tls();
        assertThat(handshake(COORDINATOR, null, stranger, "127.0.0.1", null).refusal()).isNotNull();

        ClusterTls expired = CA.issue(new PeerIdentity(NodeRole.WORKER, "worker-0"), LOOPBACK,
                Instant.now().minus(Duration.ofDays(2)), Instant.now().minus(Duration.ofDays(1))).tls();
        assertThat(handshake(COORDINATOR, null, expired, "127.0.0.1", null).refusal()).hasStackTraceContaining("CertificateExpiredException");
    }

    @Test
    void anythingOlderThanTls13IsRefused() throws Exception {
        Outcome o = handshake(COORDINATOR, null, WORKER, "127.0.0.1", "TLSv1.2");
        assertThat(o.refusal()).isNotNull();
    }

    @Test
    void aClientChecksTheServersHostName() throws Exception {
        // the server's certificate names 127.0.0.1 and localhost, not the host the client believes it dialled
        Outcome o = handshake(COORDINATOR, null, WORKER, "coordinator.example", null);
        assertThat(o.client()).isNull();
    }

    @Test
    void aLinkForOneRoleRefusesEveryOther() throws Exception {
        assertThat(handshake(COORDINATOR, NodeRole.COORDINATOR, WORKER, "127.0.0.1", null).refusal())
                .hasStackTraceContaining("only a coordinator may connect here");
        ClusterTls other = CA.issue(new PeerIdentity(NodeRole.COORDINATOR, "coordinator-1"), LOOPBACK, Duration.ofDays(1)).tls();
        assertThat(handshake(COORDINATOR, NodeRole.COORDINATOR, other, "127.0.0.1", null).refusal()).isNull();
    }

    /**
     * One connection: the server requires a client certificate (of {@code role}, if given); the client dials
     * {@code host} (checked against the server's certificate) offering only {@code protocol} if given.
     */
    private static Outcome handshake(ClusterTls server, NodeRole role, ClusterTls client, String host, String protocol)
            throws Exception {
        try (SSLServerSocket listener = (SSLServerSocket) context(server, role).getServerSocketFactory()
                .createServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            listener.setNeedClientAuth(true);
            CompletableFuture<Outcome> served = CompletableFuture.supplyAsync(() -> {
                try (SSLSocket s = (SSLSocket) listener.accept()) {
                    s.setSoTimeout(10_000);
                    s.startHandshake();
                    X509Certificate peer = (X509Certificate) s.getSession().getPeerCertificates()[0];
                    s.getOutputStream().write(1);
                    s.getOutputStream().flush();
                    return new Outcome(peer, null);
                } catch (IOException e) {
                    return new Outcome(null, e);
                }
            });
            // TLS over a loopback connection, the client believing it dialled `host`
            try (Socket raw = new Socket(InetAddress.getLoopbackAddress(), listener.getLocalPort());
                 SSLSocket s = (SSLSocket) context(client, null).getSocketFactory()
                         .createSocket(raw, host, listener.getLocalPort(), true)) {
                s.setSoTimeout(10_000);
                SSLParameters params = s.getSSLParameters();
                params.setEndpointIdentificationAlgorithm("HTTPS"); // as grpc-java's client sets it
                if (protocol != null) {
                    params.setProtocols(new String[] {protocol});
                }
                s.setSSLParameters(params);
                s.startHandshake();
                s.getInputStream().read();
            } catch (IOException clientRefused) {
                // the client refused the server, or saw the server's refusal
            }
            return served.get(20, TimeUnit.SECONDS);
        }
    }

    private static SSLContext context(ClusterTls tls, NodeRole role) throws GeneralSecurityException {
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(tls.keyManagers().getKeyManagers(), new TrustManager[] {tls.trustManager(role)}, null);
        return ctx;
    }
}
