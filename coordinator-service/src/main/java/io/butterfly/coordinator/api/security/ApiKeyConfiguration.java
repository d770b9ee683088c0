package io.butterfly.coordinator.api.security;

import io.butterfly.common.web.auth.ApiKeySecurity;
import io.butterfly.common.web.auth.ApiKeys;
import io.butterfly.coordinator.api.openai.OpenAiErrors;
import io.butterfly.coordinator.config.ApiKeysProperties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpMethod;
import org.springframework.security.authentication.AuthenticationManager;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;

/**
 * Who may call what (docs/security.md). With API keys set: generating (OpenAI's {@code /v1/**}, the native inference
 * endpoints) and reading tasks need a key; reading the cluster's state, the probes, the metrics and the dashboard stay
 * open; anything
 * else, which changes the cluster (drain, rebalance, ...), needs an admin key. Without keys everything is open, and
 * the coordinator says so when it starts.
 */
@Configuration(proxyBeanMethods = false)
public class ApiKeyConfiguration {

    private static final Logger log = LoggerFactory.getLogger(ApiKeyConfiguration.class);

    @Bean
    ApiKeys apiKeys(ApiKeysProperties props) {
        ApiKeys keys = props.load();
        if (keys.enabled()) {
            log.info("API keys: /v1/** and inference need a key, changes to the cluster an admin key ({}{})",
                    props.file() == null ? "" : "keys " + props.file(),
                    props.adminFile() == null ? "" : (props.file() == null ? "" : ", ") + "admin keys " + props.adminFile());
        } else {
            log.warn("API keys: none set, every endpoint is open to whoever reaches this port "
                    + "(butterfly.coordinator.api-keys.file and .admin-file set them)");
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
                .requestMatchers("/v1/**").hasRole(ApiKeySecurity.USER)
                .requestMatchers(HttpMethod.POST, "/api/v1/inference", "/api/v1/inference/stream")
                .hasRole(ApiKeySecurity.USER)
                // a task's tokens are its client's: each key sees its own (TasksController)
                .requestMatchers(HttpMethod.GET, "/api/v1/tasks", "/api/v1/tasks/**").hasRole(ApiKeySecurity.USER)
                // a job's results are its operator's (docs/jobs.md)
                .requestMatchers(HttpMethod.GET, "/api/v1/jobs/*/results").hasRole(ApiKeySecurity.ADMIN)
                .requestMatchers(HttpMethod.GET, "/**").permitAll()
                .requestMatchers(HttpMethod.HEAD, "/**").permitAll()
                .anyRequest().hasRole(ApiKeySecurity.ADMIN),
                OpenAiErrors::addTo);
    }
}
