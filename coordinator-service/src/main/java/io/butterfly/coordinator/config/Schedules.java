package io.butterfly.coordinator.config;

import io.butterfly.coordinator.inference.OrphanedTasks;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/** The periodic checks, on Spring's scheduler; each runs its delay after the previous run ended. */
@Component
class Schedules {

    private final OrphanedTasks orphans;

    Schedules(OrphanedTasks orphans) {
        this.orphans = orphans;
    }

    @Scheduled(fixedDelay = 2_000, initialDelay = 2_000)
    void failOrphanedTasks() {
        orphans.failOrphanedTasks();
    }
}
