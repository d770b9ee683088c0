package io.butterfly.registry.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.manifest.ManifestVerifier;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.registry.catalog.ModelCatalog;
import io.butterfly.registry.store.ModelStore;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which key signs the manifests: one provisioned in publisher-dir (Kubernetes Secret), else the store's own. */
class PublisherKeyTest {

    private static Manifest importTiny(Path tmp, Path publisherDir) throws Exception {
        ModelFixtures.write(ModelFixtures.tinyLlama(false), 3, tmp.resolve("src/tiny"));
        RegistryProperties props = new RegistryProperties(tmp.resolve("store"), List.of(), "", 1 << 20, 0, publisherDir,
                List.of());
        RegistryConfiguration config = new RegistryConfiguration();
        ModelStore store = config.modelStore(props);
        ModelCatalog catalog = config.modelCatalog(store, props, Clock.systemUTC());
        return catalog.importModel(tmp.resolve("src/tiny"), "tiny");
    }

    @Test
    void aProvisionedPublisherKeySignsAndNoKeyIsCreatedInTheStore(@TempDir Path tmp) throws Exception {
        Path provisioned = tmp.resolve("secret");
        String key = NodeIdentity.loadOrCreate(provisioned).publicKeyHex();

        Manifest manifest = importTiny(tmp, provisioned);

        assertThat(manifest.publisherKey()).isEqualTo(key);
        assertThat(new ManifestVerifier(List.of(key)).verify(manifest).modelId()).isEqualTo("tiny");
        assertThat(Files.exists(tmp.resolve("store/publisher"))).isFalse();
    }

    @Test
    void withoutOneTheRegistryKeepsItsOwnKeyInItsStore(@TempDir Path tmp) throws Exception {
        Manifest manifest = importTiny(tmp, null);

        assertThat(manifest.publisherKey()).isEqualTo(NodeIdentity.loadOrCreate(tmp.resolve("store/publisher")).publicKeyHex());
    }
}
