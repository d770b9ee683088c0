package io.butterfly.coordinator.config;

import io.butterfly.coordinator.bootstrap.CrossValidator;
import io.butterfly.coordinator.bootstrap.StageReloader;
import io.butterfly.coordinator.inference.OrphanedTasks;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/** The periodic checks, on Spring's scheduler; each runs its delay after the previous run ended. */
@Component
class Schedules {

    private final CrossValidator validator;
    private final StageReloader reloader;
    private final OrphanedTasks orphans;

    Schedules(CrossValidator validator, StageReloader reloader, OrphanedTasks orphans) {
        this.validator = validator;
        this.reloader = reloader;
        this.orphans = orphans;
    }

    @Scheduled(fixedDelay = 200)
    void crossValidateLoadedStages() {
        validator.validateWhenLoaded();
    }

    @Scheduled(fixedDelay = 5_000, initialDelay = 5_000)
    void reloadUnloadedStages() {
        reloader.reloadUnloadedStages();
    }

    @Scheduled(fixedDelay = 2_000, initialDelay = 2_000)
    void failOrphanedTasks() {
        orphans.failOrphanedTasks();
    }
}
