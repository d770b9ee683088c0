package io.butterfly.worker.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.crypto.NodeIdentity;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;

/**
 * How the Helm chart hands a worker its trusted publisher key: the Secret's identity.pub, mounted as a file
 * named after the property, read through Spring's config tree import. The key file ends in a newline
 * (./butterfly keygen writes it so); the bound key must not.
 */
class TrustedKeyConfigTreeTest {

    @Configuration(proxyBeanMethods = false)
    @EnableConfigurationProperties(WorkerProperties.class)
    static class Binding {
    }

    @Test
    void aMountedPublicKeyFileBecomesTheTrustedPublisherKey(@TempDir Path tmp) throws Exception {
        String key = NodeIdentity.loadOrCreate(tmp.resolve("publisher")).publicKeyHex();
        Path trust = Files.createDirectories(tmp.resolve("trust"));
        Files.copy(tmp.resolve("publisher/identity.pub"), trust.resolve("butterfly.worker.trusted-publisher-keys"));

        try (ConfigurableApplicationContext ctx = new SpringApplicationBuilder(Binding.class)
                .web(WebApplicationType.NONE).logStartupInfo(false)
                .run("--spring.config.import=configtree:" + trust + "/")) {
            assertThat(ctx.getBean(WorkerProperties.class).trustedPublisherKeys()).containsExactly(key);
        }
    }
}
