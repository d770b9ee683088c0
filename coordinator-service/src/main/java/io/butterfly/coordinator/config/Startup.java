package io.butterfly.coordinator.config;

import io.butterfly.coordinator.gateway.discovery.DiscoveryGateway;
import io.butterfly.coordinator.model.ReplicaModelLoader;
import io.butterfly.coordinator.reconcile.ControlLoop;
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
    private final ControlLoop controlLoop;
    private final ReplicaModelLoader modelLoader;

    Startup(DiscoveryGateway discovery, ControlLoop controlLoop, ReplicaModelLoader modelLoader) {
        this.discovery = discovery;
        this.controlLoop = controlLoop;
        this.modelLoader = modelLoader;
    }

    @EventListener(ApplicationReadyEvent.class)
    void start() {
        discovery.register();
        controlLoop.start();
        modelLoader.start();
    }
}
