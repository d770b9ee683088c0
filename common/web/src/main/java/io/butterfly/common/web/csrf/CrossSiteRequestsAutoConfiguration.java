package io.butterfly.common.web.csrf;

import io.butterfly.common.web.ProblemDecoration;
import java.util.List;
import java.util.Set;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;

/** {@link CrossSiteRequestFilter} in every Butterfly service, before API keys are checked. */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
public class CrossSiteRequestsAutoConfiguration {

    @Bean
    FilterRegistrationBean<CrossSiteRequestFilter> crossSiteRequestFilter(
            @Value("${butterfly.http.allowed-origins:}") List<String> allowedOrigins,
            ObjectProvider<ProblemDecoration> decoration) {
        FilterRegistrationBean<CrossSiteRequestFilter> registration = new FilterRegistrationBean<>(
                new CrossSiteRequestFilter(Set.copyOf(allowedOrigins.stream().filter(o -> !o.isBlank()).toList()),
                        decoration.getIfAvailable(() -> ProblemDecoration.NONE)));
        registration.setOrder(Ordered.HIGHEST_PRECEDENCE + 11); // right after the body limit
        registration.addUrlPatterns("/*");
        return registration;
    }
}
