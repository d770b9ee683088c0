package io.butterfly.cli.tls;

import io.butterfly.cli.process.ServiceLaunch;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.common.pki.ClusterCa;
import io.butterfly.common.pki.Pem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClusterCertificatesTest {

    private static final PeerIdentity WORKER_0 = new PeerIdentity(NodeRole.WORKER, "worker-0");

    @TempDir
    Path dir;

    @Test
    void aServiceGetsItsOwnCertificateOnFirstUseAndKeepsIt() throws Exception {
        ClusterCertificates certificates = ClusterCertificates.under(dir.resolve("tls"));
        List<String> args = certificates.arguments(new ServiceLaunch("worker-0", "worker", "worker-0", "worker-service",
                8090, 9090, "1g", List.of()));
        Path node = dir.resolve("tls/worker/worker-0");
        assertThat(args).containsExactly("--butterfly.tls.dir=" + node);

        X509Certificate cert = Pem.readCertificates(node.resolve("node.crt")).get(0);
        assertThat(PeerIdentity.of(cert)).contains(WORKER_0);
        assertThat(certificates.ca().issued(cert)).isTrue();
        assertThat(cert.getSubjectAlternativeNames()).extracting(n -> (Object) n.get(1)).contains("127.0.0.1", "localhost");
        assertThat(Files.getPosixFilePermissions(node.resolve("node.key"))).isEqualTo(PosixFilePermissions.fromString("rw-------"));
        assertThat(Files.getPosixFilePermissions(dir.resolve("tls/ca.key"))).isEqualTo(PosixFilePermissions.fromString("rw-------"));
        assertThat(Files.getPosixFilePermissions(dir.resolve("tls"))).isEqualTo(PosixFilePermissions.fromString("rwx------"));

        // a later run of the same cluster: same CA, same certificate
        ClusterCertificates again = ClusterCertificates.under(dir.resolve("tls"));
        again.directory(WORKER_0);
        assertThat(again.ca().certificate()).isEqualTo(certificates.ca().certificate());
        assertThat(Pem.readCertificates(node.resolve("node.crt"))).containsExactly(cert);
    }

    @Test
    void aCertificateAboutToExpireOrFromAnotherCaIsIssuedAgain() throws Exception {
        ClusterCertificates certificates = ClusterCertificates.under(dir.resolve("tls"));
        Path node = certificates.directory(WORKER_0);

        ClusterCa.create("another CA", Duration.ofDays(30)).issue(WORKER_0, List.of(), Duration.ofDays(30)).writeTo(node);
        certificates.directory(WORKER_0);
        assertThat(certificates.ca().issued(Pem.readCertificates(node.resolve("node.crt")).get(0))).isTrue();

        certificates.ca().issue(WORKER_0, List.of(), Instant.now().minus(Duration.ofDays(1)),
                Instant.now().plus(Duration.ofDays(1))).writeTo(node);
        certificates.directory(WORKER_0);
        assertThat(Pem.readCertificates(node.resolve("node.crt")).get(0).getNotAfter().toInstant())
                .isAfter(Instant.now().plus(Duration.ofDays(300)));
    }

    @Test
    void onlyANodeRoleCanBeCertified() {
        ClusterCertificates certificates = ClusterCertificates.under(dir.resolve("tls"));
        assertThatThrownBy(() -> certificates.arguments(new ServiceLaunch("tool", "tool", "tool-0", "butterfly-cli",
                1, 2, "1g", List.of()))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'tool'");
    }
}
