package io.butterfly.coordinator.config;

import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ModelRegistry;
import io.butterfly.coordinator.model.Tokenizer;
import io.butterfly.coordinator.tokenizer.DjlTokenizers;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The served model: its catalog, fed by the registry, and the tokenizer library that reads its tokenizer. */
@Configuration
public class ModelConfiguration {

    @Bean
    Tokenizer.Loader tokenizers() {
        return new DjlTokenizers();
    }

    @Bean(destroyMethod = "close")
    ModelCatalog modelCatalog(CoordinatorProperties props, ModelRegistry registry, Tokenizer.Loader tokenizers) {
        return new ModelCatalog(props.catalog(), registry, tokenizers);
    }
}
