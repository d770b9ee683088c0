package io.butterfly.worker.config;

import io.butterfly.worker.gateway.DiscoveryGateway;
import io.butterfly.worker.pipeline.IdleCacheEviction;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/** What the worker does by itself once it is up: joins the cluster, and sweeps idle KV caches every minute. */
@Component
class BackgroundTasks {

    private final DiscoveryGateway membership;
    private final IdleCacheEviction eviction;

    BackgroundTasks(DiscoveryGateway membership, IdleCacheEviction eviction) {
        this.membership = membership;
        this.eviction = eviction;
    }

    /** In the background: the join waits for the capabilities to be measured. */
    @EventListener(ApplicationReadyEvent.class)
    void joinCluster() {
        membership.start();
    }

    @Scheduled(fixedDelay = 60_000, initialDelay = 60_000)
    void evictIdleCaches() {
        eviction.evictIdle();
    }
}
