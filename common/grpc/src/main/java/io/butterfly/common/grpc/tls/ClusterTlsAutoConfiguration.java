package io.butterfly.common.grpc.tls;

import io.butterfly.common.grpc.CallerInterceptor;
import io.butterfly.common.grpc.CallerTables;
import io.butterfly.common.grpc.PeerDialer;
import io.butterfly.common.tls.ClusterTls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.ssl.SslBundleRegistrar;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslBundleKey;
import org.springframework.boot.ssl.SslManagerBundle;
import org.springframework.boot.ssl.SslOptions;
import org.springframework.boot.ssl.SslStoreBundle;
import org.springframework.boot.ssl.pem.PemContent;
import org.springframework.context.annotation.Bean;
import org.springframework.grpc.server.GlobalServerInterceptor;

/**
 * Mutual TLS for every service (docs/security.md): loads this node's certificate, key and the cluster CA
 * ({@code butterfly.tls.*}) into the {@link ClusterTls} the gateways open their channels and Raft its links with,
 * registers it as the SSL bundle {@value #BUNDLE} that the gRPC server serves with
 * ({@code spring.grpc.server.ssl.bundle}, client certificates required), identifies and authorizes each caller from
 * its certificate ({@link CallerInterceptor}, by {@link CallerTables}), and opens the service's
 * channels to the others with it ({@link PeerDialer}).
 */
@AutoConfiguration
@EnableConfigurationProperties(TlsProperties.class)
public class ClusterTlsAutoConfiguration {

    /** The SSL bundle every gRPC server serves with (and REST may: {@code server.ssl.bundle=butterfly}). */
    public static final String BUNDLE = "butterfly";

    private static final Logger log = LoggerFactory.getLogger(ClusterTlsAutoConfiguration.class);

    @Bean
    ClusterTls clusterTls(TlsProperties props) {
        if (!props.enabled()) {
            log.warn("TLS IS OFF (butterfly.tls.enabled=false): every gRPC port of this service is plaintext and"
                    + " unauthenticated; anyone who can reach it can speak for any node. Use this on a trusted loopback"
                    + " only (./butterfly up --insecure).");
            return ClusterTls.PLAINTEXT;
        }
        ClusterTls tls = ClusterTls.of(privateKey(props.privateKeyFile()), certificates(props.certificateFile()),
                certificates(props.caFile()));
        log.info("{} (key {}, CA {})", tls, props.privateKeyFile(), props.caFile());
        return tls;
    }

    /**
     * The cluster's TLS as an SSL bundle; none when TLS is off (the gRPC server then has it off too). The managers are
     * what gRPC uses (the cluster's trust manager); the stores are for servers that take stores (Tomcat, for REST).
     */
    @Bean
    SslBundleRegistrar clusterTlsBundle(ClusterTls tls) {
        return registry -> {
            if (tls.enabled()) {
                registry.registerBundle(BUNDLE, SslBundle.of(
                        SslStoreBundle.of(tls.keyStore(), ClusterTls.KEY_PASSWORD, tls.trustStore()),
                        SslBundleKey.of(ClusterTls.KEY_PASSWORD), SslOptions.of(null, new String[] {"TLSv1.3"}),
                        SslBundle.DEFAULT_PROTOCOL, SslManagerBundle.of(tls.keyManagers(), tls.trustManagers())));
            }
        };
    }

    /** The service's channels to the others, over the network; a test running services in one JVM gives its own. */
    @Bean
    @ConditionalOnMissingBean
    PeerDialer peerDialer(ClusterTls tls) {
        return PeerDialer.overNetwork(tls);
    }

    @Bean
    @GlobalServerInterceptor
    CallerInterceptor callerInterceptor(ClusterTls tls) {
        return new CallerInterceptor(tls.enabled());
    }

    private static List<X509Certificate> certificates(Path file) {
        List<X509Certificate> certificates = pem(file).getCertificates();
        if (certificates == null || certificates.isEmpty()) {
            throw new IllegalStateException(file + " holds no PEM certificate");
        }
        return certificates;
    }

    private static PrivateKey privateKey(Path file) {
        PrivateKey key = pem(file).getPrivateKey();
        if (key == null) {
            throw new IllegalStateException(file + " holds no PEM private key");
        }
        return key;
    }

    private static PemContent pem(Path file) {
        try {
            return PemContent.load(file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + " (butterfly.tls.*)", e);
        }
    }
}
