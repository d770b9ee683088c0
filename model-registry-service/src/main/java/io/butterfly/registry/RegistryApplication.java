package io.butterfly.registry;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/** Turns Hugging Face model directories into per-layer shards with a manifest and serves them in verified chunks. */
@SpringBootApplication
@ConfigurationPropertiesScan
public class RegistryApplication {
    public static void main(String[] args) {
        SpringApplication.run(RegistryApplication.class, args);
    }
}
