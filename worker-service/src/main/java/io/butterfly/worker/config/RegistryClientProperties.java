package io.butterfly.worker.config;

import java.nio.file.Path;
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
 * @param sharedStore           the registry's store directory as this worker sees it ({@code <dir>/<model-id>/<file>}):
 *                              the same directory on one machine, a read-only volume in a cluster. Files found there
 *                              are copied and checked against the signed manifest instead of being streamed; a file
 *                              missing or different there is streamed. Unset (the default): every file is streamed
 */
@ConfigurationProperties("butterfly.worker.registry")
public record RegistryClientProperties(
        @DefaultValue("5") int breakerFailuresToOpen,
        @DefaultValue("5s") Duration breakerOpenFor,
        @DefaultValue("2") int parallelFiles,
        @DefaultValue("false") boolean compression,
        Path sharedStore) {
}
