package io.butterfly.common.grpc.tls;

import java.nio.file.Path;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * {@code butterfly.tls.*}: mutual TLS on every gRPC port, on unless turned off explicitly.
 *
 * @param enabled     false: plaintext and unauthenticated (logged loudly at start)
 * @param dir         a directory holding {@code ca.crt}, {@code node.crt} and {@code node.key} ({@code ./butterfly up}
 *                    writes one per service); each file may be named on its own instead
 * @param certificate this node's certificate (PEM; intermediates after it), default {@code <dir>/node.crt}
 * @param privateKey  its private key (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC), default {@code <dir>/node.key}
 * @param ca          the cluster CA's certificate (PEM), default {@code <dir>/ca.crt}
 */
@ConfigurationProperties("butterfly.tls")
public record TlsProperties(@DefaultValue("true") boolean enabled, Path dir, Path certificate, Path privateKey, Path ca) {

    public Path certificateFile() {
        return file(certificate, "node.crt", "certificate");
    }

    public Path privateKeyFile() {
        return file(privateKey, "node.key", "private-key");
    }

    public Path caFile() {
        return file(ca, "ca.crt", "ca");
    }

    private Path file(Path given, String inDir, String property) {
        if (given != null) {
            return given;
        }
        if (dir == null) {
            throw new IllegalStateException("mutual TLS is on but neither butterfly.tls.dir nor butterfly.tls." + property
                    + " is set: point butterfly.tls.dir at a directory holding ca.crt, node.crt and node.key"
                    + " (./butterfly up makes one per service), or turn TLS off with butterfly.tls.enabled=false");
        }
        return dir.resolve(inDir);
    }
}
