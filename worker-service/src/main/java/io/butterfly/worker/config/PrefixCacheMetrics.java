package io.butterfly.worker.config;

import io.butterfly.worker.engine.PartitionExecutor;
import io.butterfly.worker.engine.PrefixCacheStats;
import io.butterfly.worker.partition.PartitionManager;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.ToDoubleFunction;

/**
 * The stage's prefix cache on {@code /actuator/prometheus}: hit rate, blocks held and their bytes, and counters of the
 * prompt tokens looked up, found and the blocks evicted. Read from the loaded partition when scraped (zero without
 * one; the counters start again with a newly loaded partition).
 */
final class PrefixCacheMetrics implements MeterBinder {

    private final PartitionManager partitions;

    PrefixCacheMetrics(PartitionManager partitions) {
        this.partitions = partitions;
    }

    private double read(ToDoubleFunction<PrefixCacheStats> field) {
        PartitionExecutor executor = partitions.loadedExecutor();
        return field.applyAsDouble(executor == null ? PrefixCacheStats.OFF : executor.prefixCacheStats());
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Gauge.builder("butterfly.prefix_cache.hit_rate", this, m -> m.read(PrefixCacheStats::hitRate))
                .description("prompt tokens in full blocks found in the prefix cache over those looked up").register(registry);
        Gauge.builder("butterfly.prefix_cache.blocks", this, m -> m.read(PrefixCacheStats::blocks))
                .description("full blocks the prefix cache holds").register(registry);
        Gauge.builder("butterfly.prefix_cache.bytes", this, m -> m.read(PrefixCacheStats::bytes))
                .description("memory the prefix cache's blocks take, within the KV budget").register(registry);
        FunctionCounter.builder("butterfly.prefix_cache.queried_tokens", this, m -> m.read(PrefixCacheStats::queriedTokens))
                .description("prompt tokens in full blocks looked up in the prefix cache").register(registry);
        FunctionCounter.builder("butterfly.prefix_cache.hit_tokens", this, m -> m.read(PrefixCacheStats::hitTokens))
                .description("prompt tokens restored from the prefix cache instead of computed").register(registry);
        FunctionCounter.builder("butterfly.prefix_cache.evictions", this, m -> m.read(PrefixCacheStats::evictions))
                .description("blocks evicted from the prefix cache, least recently used first").register(registry);
    }
}
