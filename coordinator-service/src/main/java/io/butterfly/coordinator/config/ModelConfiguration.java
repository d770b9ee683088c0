package io.butterfly.coordinator.config;

import io.butterfly.coordinator.jinja.JinjavaChatTemplates;
import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ModelRegistry;
import io.butterfly.coordinator.model.Tokenizer;
import io.butterfly.coordinator.tokenizer.DjlTokenizers;
import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The served model: its catalog, fed by the registry, the tokenizer library that reads its tokenizer and the Jinja
 * engine that renders its chat template.
 */
@Configuration
public class ModelConfiguration {

    @Bean
    Tokenizer.Loader tokenizers() {
        return new DjlTokenizers();
    }

    @Bean
    ChatTemplate.Compiler chatTemplates(Clock clock) {
        return new JinjavaChatTemplates(clock);
    }

    @Bean(destroyMethod = "close")
    ModelCatalog modelCatalog(CoordinatorProperties props, ModelRegistry registry, Tokenizer.Loader tokenizers,
                              ChatTemplate.Compiler chatTemplates) {
        return new ModelCatalog(props.catalog(), registry, tokenizers, chatTemplates);
    }
}
