package io.butterfly.registry.config;

import io.butterfly.common.web.auth.ApiKeySecurity;
import io.butterfly.common.web.auth.ApiKeys;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpMethod;
import org.springframework.security.authentication.AuthenticationManager;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;

/**
 * Who may call what (docs/security.md): with admin keys set, importing a model (and any other change) needs one;
 * manifests, the probes and the metrics stay open. Without keys everything is open, and the registry says so.
 */
@Configuration(proxyBeanMethods = false)
public class ApiKeyConfiguration {

    private static final Logger log = LoggerFactory.getLogger(ApiKeyConfiguration.class);

    @Bean
    ApiKeys apiKeys(ApiKeysProperties props) {
        ApiKeys keys = props.load();
        if (keys.enabled()) {
            log.info("API keys: importing a model needs an admin key ({})", props.adminFile());
        } else {
            log.warn("API keys: none set, anyone who reaches this port may import models "
                    + "(butterfly.registry.api-keys.admin-file sets them)");
        }
        return keys;
    }

    /** The only authentication there is: no user with a generated password. */
    @Bean
    AuthenticationManager apiKeyChecker(ApiKeys keys) {
        return ApiKeySecurity.checker(keys);
    }

    @Bean
    SecurityFilterChain apiKeyFilterChain(HttpSecurity http, ApiKeys keys, AuthenticationManager checker) {
        return ApiKeySecurity.chain(http, keys, checker, rules -> rules
                .requestMatchers(HttpMethod.GET, "/**").permitAll()
                .requestMatchers(HttpMethod.HEAD, "/**").permitAll()
                .anyRequest().hasRole(ApiKeySecurity.ADMIN),
                (request, problem) -> { });
    }
}
