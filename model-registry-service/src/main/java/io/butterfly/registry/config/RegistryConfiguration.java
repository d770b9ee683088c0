package io.butterfly.registry.config;

import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.common.manifest.ManifestVerifier;
import io.butterfly.registry.api.grpc.ModelRegistryGrpcService;
import io.butterfly.registry.catalog.ImportRoots;
import io.butterfly.registry.catalog.ModelCatalog;
import io.butterfly.registry.catalog.ModelImporter;
import io.butterfly.registry.store.ModelStore;
import java.io.IOException;
import java.time.Clock;
import java.util.List;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The registry's parts, wired from its settings. */
@Configuration
public class RegistryConfiguration {

    @Bean
    Clock clock() {
        return Clock.systemUTC();
    }

    @Bean
    ModelStore modelStore(RegistryProperties props) throws IOException {
        return new ModelStore(props.storeDir(), List.of(props.publisherDir()));
    }

    @Bean
    ModelCatalog modelCatalog(ModelStore store, RegistryProperties props, Clock clock) throws IOException {
        NodeIdentity publisher = NodeIdentity.loadOrCreate(props.publisherDir());
        ModelCatalog catalog = new ModelCatalog(store, new ModelImporter(clock), m -> ManifestVerifier.sign(m, publisher));
        catalog.loadStored();
        return catalog;
    }

    /** Where an import asked over the API may read from (none set: such imports are refused). */
    @Bean
    ImportRoots importRoots(RegistryProperties props) {
        return ImportRoots.of(props.importRoots());
    }

    @Bean
    ModelRegistryGrpcService modelRegistryGrpcService(ModelCatalog catalog, RegistryProperties props) {
        return new ModelRegistryGrpcService(catalog, props.maxChunkBytes(), props.zstdLevel());
    }

    @Bean
    ButterflyGrpcExceptionHandler grpcExceptionHandler() {
        return new ButterflyGrpcExceptionHandler();
    }
}
