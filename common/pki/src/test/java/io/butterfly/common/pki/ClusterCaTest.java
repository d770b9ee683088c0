package io.butterfly.common.pki;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClusterCaTest {

    private static final PeerIdentity WORKER = new PeerIdentity(NodeRole.WORKER, "worker-0");

    @TempDir
    Path dir;

    @Test
    void aNodeCertificateNamesItsIdentityAndHostsForBothEndsOfAConnection() throws Exception {
        ClusterCa ca = ClusterCa.create("test CA", Duration.ofDays(30));
        NodeCertificate node = ca.issue(WORKER, List.of("127.0.0.1", "localhost", "w0.pods.svc"), Duration.ofDays(1));
        X509Certificate cert = node.certificate();

        assertThat(PeerIdentity.of(cert)).contains(WORKER);
        assertThat(cert.getSubjectAlternativeNames()).extracting(n -> (Object) n.get(1)).containsExactlyInAnyOrder(
                "worker-0.worker.butterfly.internal", "127.0.0.1", "localhost", "w0.pods.svc");
        assertThat(cert.getExtendedKeyUsage()).containsExactlyInAnyOrder("1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2");
        assertThat(cert.getBasicConstraints()).isEqualTo(-1);
        assertThat(ca.certificate().getBasicConstraints()).isZero();
        cert.checkValidity();
        assertThat(cert.getNotAfter().toInstant()).isBefore(Instant.now().plus(Duration.ofDays(1).plusMinutes(1)));
        assertThat(ca.issued(cert)).isTrue();
        assertThat(ClusterCa.create("another CA", Duration.ofDays(30)).issued(cert)).isFalse();
    }

    @Test
    void aCertificateNamingTwoIdentitiesSpeaksForNobody() {
        ClusterCa ca = ClusterCa.create("test CA", Duration.ofDays(30));
        NodeCertificate both = ca.issue(WORKER, List.of("coordinator-0.coordinator.butterfly.internal"), Duration.ofDays(1));
        assertThat(PeerIdentity.of(both.certificate())).isEmpty();
    }

    @Test
    void keysAreWrittenForTheirOwnerOnlyAndTheCaIsKeptAcrossRuns() throws Exception {
        ClusterCa ca = ClusterCa.loadOrCreate(dir, "test CA", Duration.ofDays(30));
        ClusterCa again = ClusterCa.loadOrCreate(dir, "test CA", Duration.ofDays(30));
        assertThat(again.certificate()).isEqualTo(ca.certificate());
        assertThat(Files.getPosixFilePermissions(dir.resolve("ca.key"))).isEqualTo(PosixFilePermissions.fromString("rw-------"));

        NodeCertificate node = again.issue(WORKER, List.of("127.0.0.1"), Duration.ofDays(1));
        node.writeTo(dir.resolve("worker-0"));
        assertThat(Files.getPosixFilePermissions(dir.resolve("worker-0/node.key")))
                .isEqualTo(PosixFilePermissions.fromString("rw-------"));
        assertThat(Pem.readCertificates(dir.resolve("worker-0/node.crt"))).containsExactly(node.certificate());
        assertThat(Pem.readCertificates(dir.resolve("worker-0/ca.crt"))).containsExactly(ca.certificate());
        assertThat(Pem.readPrivateKey(dir.resolve("worker-0/node.key"), "EC")).isEqualTo(node.key());
        assertThat(ca.issued(node.certificate())).isTrue();
    }
}
