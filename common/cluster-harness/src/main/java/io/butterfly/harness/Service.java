package io.butterfly.harness;

import io.butterfly.coordinator.CoordinatorApplication;
import io.butterfly.discovery.DiscoveryApplication;
import io.butterfly.registry.RegistryApplication;
import io.butterfly.worker.WorkerApplication;
import java.net.URL;
import java.util.List;

/**
 * The four services as the harness starts them: each one's Spring application, its own {@code application.yaml}, and
 * what it must not pick up from the others in a shared JVM.
 *
 * <p>In one JVM the four services share one classpath, so two things a service gets from its own process must be
 * given explicitly. Its settings: {@code classpath:application.yaml} would be whichever service's came first, so each
 * is pointed at the file in its own jar. And its auto-configuration: Spring Boot configures what it finds on the
 * classpath, so a worker would find the coordinator's Spring Security (and lock its REST API behind a generated
 * password); the auto-configurations of libraries a service does not have in its own process are excluded.
 */
enum Service {

    DISCOVERY(DiscoveryApplication.class, "discovery", true),
    REGISTRY(RegistryApplication.class, "registry", false),
    WORKER(WorkerApplication.class, "worker", true),
    COORDINATOR(CoordinatorApplication.class, "coordinator", false);

    /** Spring Security and Spring gRPC's server security: the coordinator's and the registry's, not the others'. */
    private static final List<String> SECURITY = List.of(
            "org.springframework.boot.security.autoconfigure.SecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.UserDetailsServiceAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.ReactiveUserDetailsServiceAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.actuate.web.servlet.ManagementWebSecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.actuate.web.reactive.ReactiveManagementWebSecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.web.servlet.SecurityFilterAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.web.servlet.ServletWebSecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.web.reactive.ReactiveWebSecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.rsocket.RSocketSecurityAutoConfiguration",
            "org.springframework.boot.grpc.server.autoconfigure.security.GrpcServerSecurityAutoConfiguration",
            "org.springframework.boot.grpc.server.autoconfigure.security.GrpcServerOAuth2ResourceServerAutoConfiguration");

    private final Class<?> application;
    private final String role;
    private final boolean withoutSecurity;

    Service(Class<?> application, String role, boolean withoutSecurity) {
        this.application = application;
        this.role = role;
        this.withoutSecurity = withoutSecurity;
    }

    Class<?> application() {
        return application;
    }

    /** The node role its certificate and discovery name it by ("worker", "coordinator", ...). */
    String role() {
        return role;
    }

    /** Where its own {@code application.yaml} is: in its jar, or its classes directory in a build. */
    String ownConfig() {
        URL location = application.getProtectionDomain().getCodeSource().getLocation();
        String base = location.toString();
        return base.endsWith(".jar") ? "jar:" + base + "!/application.yaml" : base + "application.yaml";
    }

    /** The arguments that keep it to what its own process would configure. */
    List<String> isolation() {
        return withoutSecurity ? List.of("--spring.autoconfigure.exclude=" + String.join(",", SECURITY)) : List.of();
    }
}
