package io.butterfly.worker.pipeline;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.worker.engine.PartitionExecutor;
import io.butterfly.worker.partition.PartitionManager;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Frees KV caches nobody will release: a coordinator that failed over or crashed mid-task never sends the
 * release, and without this sweep its sequences would hold native memory until the worker restarts.
 */
public class IdleCacheEviction {

    private static final Logger log = LoggerFactory.getLogger(IdleCacheEviction.class);

    private final PartitionManager partitions;
    private final Duration idleTimeout;

    /** @param idleTimeout a sequence's cache that ran no step for this long is freed */
    public IdleCacheEviction(PartitionManager partitions, Duration idleTimeout) {
        this.partitions = partitions;
        this.idleTimeout = idleTimeout;
    }

    /** One sweep (run every minute). */
    public void evictIdle() {
        PartitionExecutor executor;
        try {
            executor = partitions.executor();
        } catch (ButterflyException notReady) {
            return;
        }
        List<String> evicted = executor.evictIdle(idleTimeout.toNanos());
        if (!evicted.isEmpty()) {
            log.warn("freed the KV caches of {} sequence(s) that ran no step for {}: {}", evicted.size(),
                    idleTimeout, evicted);
        }
    }
}
