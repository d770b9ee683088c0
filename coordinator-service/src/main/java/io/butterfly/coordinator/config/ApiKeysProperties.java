package io.butterfly.coordinator.config;

import io.butterfly.common.web.auth.ApiKeys;
import java.nio.file.Path;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The API keys the coordinator accepts (docs/security.md), each file one key a line (Kubernetes mounts them from a
 * Secret). Neither set: every endpoint is open, as on the embedded default.
 *
 * @param file      keys that may generate (/v1/** and the inference endpoints)
 * @param adminFile keys that may also change the cluster (drain, rebalance, ...)
 */
@ConfigurationProperties("butterfly.coordinator.api-keys")
public record ApiKeysProperties(Path file, Path adminFile) {

    public ApiKeys load() {
        return ApiKeys.load(file, adminFile);
    }
}
