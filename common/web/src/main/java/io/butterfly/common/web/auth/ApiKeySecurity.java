package io.butterfly.common.web.auth;

import io.butterfly.common.web.ProblemDocuments;
import io.butterfly.common.web.audit.AuditLog;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.security.authentication.AuthenticationManager;
import org.springframework.security.authentication.BadCredentialsException;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configurers.AuthorizeHttpRequestsConfigurer;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.AuthenticationException;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.authentication.AuthenticationEntryPointFailureHandler;
import org.springframework.security.web.authentication.AuthenticationFilter;
import org.springframework.security.web.authentication.preauth.PreAuthenticatedAuthenticationToken;
import org.springframework.security.web.authentication.www.BasicAuthenticationFilter;
import tools.jackson.databind.json.JsonMapper;

/**
 * API keys with Spring Security: a request's {@code Authorization: Bearer <key>} is checked against {@link ApiKeys}
 * and becomes an authentication with the key's roles ({@code USER}, or {@code USER} and {@code ADMIN}); a request
 * without one goes on anonymous, and the service's rules say which paths need which role. Nothing else of Spring
 * Security is on: no sessions (each request carries its key), no CSRF tokens (no cookies to forge requests with), no
 * login form or basic auth. Refusals are problem documents (401 with {@code WWW-Authenticate: Bearer}, 403), which a
 * service may extend (the coordinator adds OpenAI's {@code error} object under {@code /v1/}).
 */
public final class ApiKeySecurity {

    public static final String USER = "USER";
    public static final String ADMIN = "ADMIN";

    private static final String BEARER = "Bearer ";
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private ApiKeySecurity() {
    }

    /**
     * The service's filter chain: open when {@code keys} holds none, otherwise {@code rules} decide (after every
     * error and async dispatch is let through: the request that led to it was authorized already).
     *
     * @param checker  {@link #checker(ApiKeys)}
     * @param problems adds to the problem of a refused request before it is written (e.g. OpenAI's error object)
     */
    public static SecurityFilterChain chain(HttpSecurity http, ApiKeys keys, AuthenticationManager checker,
            Customizer<AuthorizeHttpRequestsConfigurer<HttpSecurity>.AuthorizationManagerRequestMatcherRegistry> rules,
            BiConsumer<HttpServletRequest, ProblemDetail> problems) {
        http.csrf(c -> c.disable()).httpBasic(c -> c.disable()).formLogin(c -> c.disable()).logout(c -> c.disable())
                .requestCache(c -> c.disable())
                .sessionManagement(s -> s.sessionCreationPolicy(SessionCreationPolicy.STATELESS));
        if (!keys.enabled()) {
            return http.authorizeHttpRequests(a -> a.anyRequest().permitAll()).build();
        }
        AuthenticationFilter filter = new AuthenticationFilter(checker, ApiKeySecurity::presentedKey);
        filter.setSuccessHandler((request, response, authentication) -> {
            if (authentication.getPrincipal() instanceof ApiKeyPrincipal key) {
                AuditLog.keyUsed(request, key);
            }
        });
        filter.setFailureHandler(new AuthenticationEntryPointFailureHandler(
                (request, response, e) -> refuse(request, response, HttpStatus.UNAUTHORIZED, e, problems)));
        return http.addFilterAt(filter, BasicAuthenticationFilter.class)
                .exceptionHandling(e -> e
                        .authenticationEntryPoint((request, response, ex) ->
                                refuse(request, response, HttpStatus.UNAUTHORIZED, ex, problems))
                        .accessDeniedHandler((request, response, ex) ->
                                refuse(request, response, HttpStatus.FORBIDDEN, null, problems)))
                .authorizeHttpRequests(a -> {
                    a.dispatcherTypeMatchers(DispatcherType.ERROR, DispatcherType.ASYNC).permitAll();
                    rules.customize(a);
                })
                .build();
    }

    /**
     * What checks a presented key. A service declares it as its authentication manager bean, the only one it has
     * (so Spring Boot does not make a user with a generated password).
     */
    public static AuthenticationManager checker(ApiKeys keys) {
        return presented -> authenticate(keys, presented);
    }

    /** The key a request presents, unchecked; null without a bearer key. */
    private static Authentication presentedKey(HttpServletRequest request) {
        String header = request.getHeader("Authorization");
        if (header == null || !header.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
            return null;
        }
        return new PreAuthenticatedAuthenticationToken("api key", header.substring(BEARER.length()).strip());
    }

    private static Authentication authenticate(ApiKeys keys, Authentication presented) {
        ApiKeyPrincipal principal = keys.principalOf(String.valueOf(presented.getCredentials()));
        List<String> roles = switch (principal.role()) {
            case ADMIN -> List.of("ROLE_" + USER, "ROLE_" + ADMIN);
            case USER -> List.of("ROLE_" + USER);
            case NONE -> throw new BadCredentialsException("the API key is not valid");
        };
        return new PreAuthenticatedAuthenticationToken(principal, null, AuthorityUtils.createAuthorityList(roles));
    }

    /** The key the current request was authenticated with, or null (no keys set, or none presented). */
    public static ApiKeyPrincipal currentKey() {
        Authentication authentication = org.springframework.security.core.context.SecurityContextHolder.getContext()
                .getAuthentication();
        return authentication != null && authentication.getPrincipal() instanceof ApiKeyPrincipal key ? key : null;
    }

    private static void refuse(HttpServletRequest request, HttpServletResponse response, HttpStatus status,
                               AuthenticationException cause, BiConsumer<HttpServletRequest, ProblemDetail> problems)
            throws IOException {
        ProblemDetail problem = ProblemDetail.forStatus(status);
        AuditLog.keyRefused(request, status.value(), status == HttpStatus.FORBIDDEN ? "an admin key is needed"
                : cause instanceof BadCredentialsException ? "not one of the keys" : "no key");
        if (status == HttpStatus.UNAUTHORIZED) {
            problem.setTitle("Unauthorized");
            problem.setDetail(cause instanceof BadCredentialsException ? "The API key is not valid"
                    : "This endpoint needs an API key: send Authorization: Bearer <key>");
            response.setHeader("WWW-Authenticate", "Bearer");
        } else {
            problem.setTitle("Forbidden");
            problem.setDetail("This endpoint changes the cluster and needs an admin API key");
        }
        problems.accept(request, problem);
        Map<String, Object> body = ProblemDocuments.flatten(problem);
        body.put("instance", request.getRequestURI());
        response.setStatus(status.value());
        response.setContentType(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
        JSON.writeValue(response.getOutputStream(), body);
    }
}
