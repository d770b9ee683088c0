package io.butterfly.registry.config;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.registry.catalog.ModelCatalog;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * Imports {@code butterfly.registry.import-dirs} in the background once the application is up:
 * liveness is up at once, readiness follows when the start-up imports are done (failed or not).
 */
@Component
public class StartupImport implements DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(StartupImport.class);

    private final ModelCatalog catalog;
    private final RegistryProperties props;
    private final ApplicationEventPublisher events;
    private final ExecutorService executor = Executors.newSingleThreadExecutor(DaemonThreads.named("registry-import"));

    public StartupImport(ModelCatalog catalog, RegistryProperties props, ApplicationEventPublisher events) {
        this.catalog = catalog;
        this.props = props;
        this.events = events;
    }

    @EventListener(ApplicationReadyEvent.class)
    public void start() {
        if (props.importDirs().isEmpty()) {
            return;
        }
        AvailabilityChangeEvent.publish(events, this, ReadinessState.REFUSING_TRAFFIC);
        executor.execute(() -> {
            for (Path dir : props.importDirs()) {
                try {
                    catalog.importModel(dir, null, props.quantization());
                } catch (Exception | Error e) {
                    // Recorded by the catalog: a coordinator asking for the model is told why (an Error too, such
                    // as running out of memory on a tensor, which used to end this thread without a word).
                    log.error("import of {} failed: {}", dir, e.getMessage(), e);
                }
            }
            AvailabilityChangeEvent.publish(events, this, ReadinessState.ACCEPTING_TRAFFIC);
        });
    }

    @Override
    public void destroy() {
        executor.shutdownNow();
    }
}
