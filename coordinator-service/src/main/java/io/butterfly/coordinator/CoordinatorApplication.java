package io.butterfly.coordinator;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;
import org.springframework.scheduling.annotation.EnableScheduling;

/** The Butterfly coordinator: control state, partition planning, bootstrap, inference scheduling. */
@SpringBootApplication
@ConfigurationPropertiesScan
@EnableScheduling
public class CoordinatorApplication {
    public static void main(String[] args) {
        SpringApplication.run(CoordinatorApplication.class, args);
    }
}
