package io.butterfly.worker.config;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How the worker talks to model-registry-service while fetching shards.
 *
 * @param breakerFailuresToOpen consecutive failed fetch attempts after which the circuit opens and the worker stops
 *                              calling the registry for {@code breakerOpenFor}
 * @param breakerOpenFor        how long an open circuit rejects calls before one probe is let through
 * @param parallelFiles         shard files fetched at once
 * @param compression           offer the COMPRESSION feature so the registry may send zstd chunks; off by default
 *                              because on loopback compressing costs more CPU than the bytes it saves
 */
@ConfigurationProperties("butterfly.worker.registry")
public record RegistryClientProperties(
        @DefaultValue("5") int breakerFailuresToOpen,
        @DefaultValue("5s") Duration breakerOpenFor,
        @DefaultValue("2") int parallelFiles,
        @DefaultValue("false") boolean compression) {
}
