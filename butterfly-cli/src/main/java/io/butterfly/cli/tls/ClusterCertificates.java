package io.butterfly.cli.tls;

import io.butterfly.cli.process.ServiceLaunch;
import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.common.pki.ClusterCa;
import io.butterfly.common.pki.NodeCertificate;
import io.butterfly.common.pki.Pem;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The mutual-TLS material of a cluster started from here (docs/security.md): a cluster CA in {@code <dir>}
 * ({@code ca.crt}, {@code ca.key}), created on first use and kept, and per service a directory
 * {@code <dir>/<role>/<node-id>/} with {@code ca.crt}, {@code node.crt} and {@code node.key}, which the service is
 * pointed at ({@code --butterfly.tls.dir}). A node's certificate is issued on first use and again when it is missing,
 * expires within {@link #RENEW_BEFORE}, or is not from this CA. Services run on loopback: every certificate names
 * 127.0.0.1 and localhost besides its identity. Keys are readable by their owner only; the directory too.
 */
public final class ClusterCertificates {

    public static final Duration CA_VALIDITY = Duration.ofDays(3650);
    public static final Duration NODE_VALIDITY = Duration.ofDays(365);
    static final Duration RENEW_BEFORE = Duration.ofDays(7);
    /** The arguments a service starts with when TLS is off ({@code --insecure}). */
    public static final List<String> PLAINTEXT_ARGUMENTS = List.of("--butterfly.tls.enabled=false");
    private static final List<String> LOOPBACK = List.of("127.0.0.1", "localhost");

    private final Path dir;
    private final ClusterCa ca;

    private ClusterCertificates(Path dir, ClusterCa ca) {
        this.dir = dir;
        this.ca = ca;
    }

    /** The CA kept in {@code dir}, created there on first use. */
    public static ClusterCertificates under(Path dir) {
        try {
            Files.createDirectories(dir);
            try {
                Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
            } catch (UnsupportedOperationException notPosix) {
                // its own access rules apply
            }
            return new ClusterCertificates(dir, ClusterCa.loadOrCreate(dir, "Butterfly cluster CA", CA_VALIDITY));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot keep the cluster CA in " + dir, e);
        }
    }

    public ClusterCa ca() {
        return ca;
    }

    /** The arguments that give {@code launch} its certificate, issued if need be. */
    public List<String> arguments(ServiceLaunch launch) {
        NodeRole role = NodeRole.ofLabel(launch.role()).orElseThrow(() -> new IllegalArgumentException(
                "'" + launch.role() + "' is no node role a certificate can name"));
        return List.of("--butterfly.tls.dir=" + directory(new PeerIdentity(role, launch.nodeId())));
    }

    /** The TLS directory of {@code identity}, with a usable certificate in it. */
    public synchronized Path directory(PeerIdentity identity) {
        Path node = dir.resolve(identity.role().label()).resolve(identity.nodeId());
        try {
            if (!usable(node, identity)) {
                ca.issue(identity, LOOPBACK, NODE_VALIDITY).writeTo(node);
            }
            return node;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the certificate of " + identity + " to " + node, e);
        }
    }

    private boolean usable(Path node, PeerIdentity identity) throws IOException {
        Path cert = node.resolve(NodeCertificate.CERTIFICATE_FILE);
        if (!Files.exists(cert) || !Files.exists(node.resolve(NodeCertificate.KEY_FILE))
                || !Files.exists(node.resolve(NodeCertificate.CA_FILE))) {
            return false;
        }
        X509Certificate c = Pem.readCertificates(cert).get(0);
        return ca.issued(c) && PeerIdentity.of(c).equals(Optional.of(identity))
                && c.getNotAfter().toInstant().isAfter(Instant.now().plus(RENEW_BEFORE))
                && Pem.readCertificates(node.resolve(NodeCertificate.CA_FILE)).equals(List.of(ca.certificate()));
    }
}
