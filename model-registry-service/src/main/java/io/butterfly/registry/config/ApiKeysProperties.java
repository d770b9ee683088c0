package io.butterfly.registry.config;

import io.butterfly.common.web.auth.ApiKeys;
import java.nio.file.Path;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The admin API keys that may import models into the registry (docs/security.md), one key a line (Kubernetes mounts
 * them from a Secret). Not set: the import is open, as on the embedded default. Reading stays open either way.
 *
 * @param adminFile keys that may change the registry
 */
@ConfigurationProperties("butterfly.registry.api-keys")
public record ApiKeysProperties(Path adminFile) {

    public ApiKeys load() {
        return ApiKeys.load(null, adminFile);
    }
}
