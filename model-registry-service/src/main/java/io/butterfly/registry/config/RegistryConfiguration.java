package io.butterfly.registry.config;

import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.registry.catalog.ModelCatalog;
import io.butterfly.registry.catalog.ModelImporter;
import io.butterfly.registry.store.ModelStore;
import java.io.IOException;
import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration
public class RegistryConfiguration {

    @Bean
    Clock clock() {
        return Clock.systemUTC();
    }

    @Bean
    ModelStore modelStore(RegistryProperties props) throws IOException {
        return new ModelStore(props.storeDir());
    }

    @Bean
    ModelCatalog modelCatalog(ModelStore store, Clock clock) throws IOException {
        ModelCatalog catalog = new ModelCatalog(store, new ModelImporter(clock));
        catalog.loadStored();
        return catalog;
    }

    @Bean
    ButterflyGrpcExceptionHandler grpcExceptionHandler() {
        return new ButterflyGrpcExceptionHandler();
    }
}
