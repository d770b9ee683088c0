package io.butterfly.coordinator.config;

import io.butterfly.coordinator.bootstrap.BootstrapOrchestrator;
import io.butterfly.coordinator.bootstrap.LeaderTakeover;
import io.butterfly.coordinator.bootstrap.ReplicaModelLoader;
import io.butterfly.coordinator.gateway.discovery.DiscoveryGateway;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * What starts once the application serves: workers report back to its gRPC server, so leader-only work and the
 * replica's own fetch of the model wait for it, and so does joining discovery.
 */
@Component
class Startup {

    private final DiscoveryGateway discovery;
    private final BootstrapOrchestrator bootstrap;
    private final LeaderTakeover takeover;
    private final ReplicaModelLoader modelLoader;

    Startup(DiscoveryGateway discovery, BootstrapOrchestrator bootstrap, LeaderTakeover takeover,
            ReplicaModelLoader modelLoader) {
        this.discovery = discovery;
        this.bootstrap = bootstrap;
        this.takeover = takeover;
        this.modelLoader = modelLoader;
    }

    @EventListener(ApplicationReadyEvent.class)
    void start() {
        discovery.register();
        bootstrap.start();
        takeover.start();
        modelLoader.start();
    }
}
