package io.butterfly.worker.pipeline;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.worker.config.WorkerProperties;
import io.butterfly.worker.engine.PartitionExecutor;
import io.butterfly.worker.partition.PartitionManager;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * Frees KV caches nobody will release: a coordinator that failed over or crashed mid-task never sends the
 * release, and without this sweep its sequences would hold native memory until the worker restarts.
 */
@Component
class IdleCacheEviction {

    private static final Logger log = LoggerFactory.getLogger(IdleCacheEviction.class);

    private final PartitionManager partitions;
    private final WorkerProperties props;

    IdleCacheEviction(PartitionManager partitions, WorkerProperties props) {
        this.partitions = partitions;
        this.props = props;
    }

    @Scheduled(fixedDelay = 60_000, initialDelay = 60_000)
    void evictIdle() {
        PartitionExecutor executor;
        try {
            executor = partitions.executor();
        } catch (ButterflyException notReady) {
            return;
        }
        List<String> evicted = executor.evictIdle(props.cacheIdleTimeout().toNanos());
        if (!evicted.isEmpty()) {
            log.warn("freed the KV caches of {} sequence(s) that ran no step for {}: {}", evicted.size(),
                    props.cacheIdleTimeout(), evicted);
        }
    }
}
