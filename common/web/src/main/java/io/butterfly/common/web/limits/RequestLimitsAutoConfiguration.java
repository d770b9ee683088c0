package io.butterfly.common.web.limits;

import io.butterfly.common.web.ProblemDecoration;
import org.apache.catalina.startup.Tomcat;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.jackson.autoconfigure.JsonFactoryBuilderCustomizer;
import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import tools.jackson.core.StreamReadConstraints;

/**
 * Request limits in every Butterfly service ({@link RequestLimitsProperties}): the body filter first of all filters,
 * Tomcat's form-post and swallow sizes at the same limit, and the JSON parser's read constraints. Each is after
 * Boot's own customizer of the same thing, so these values are the ones in force.
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@EnableConfigurationProperties(RequestLimitsProperties.class)
public class RequestLimitsAutoConfiguration {

    @Bean
    FilterRegistrationBean<RequestBodyLimitFilter> requestBodyLimitFilter(RequestLimitsProperties limits,
                                                                          ObjectProvider<ProblemDecoration> decoration) {
        FilterRegistrationBean<RequestBodyLimitFilter> registration = new FilterRegistrationBean<>(
                new RequestBodyLimitFilter(limits.maxRequestBody().toBytes(), decoration.getIfAvailable(() -> ProblemDecoration.NONE)));
        registration.setOrder(Ordered.HIGHEST_PRECEDENCE + 10); // after the request's observation starts: a refusal is traced and counted
        registration.addUrlPatterns("/*");
        return registration;
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({Tomcat.class, TomcatServletWebServerFactory.class})
    static class TomcatLimits {

        @Bean
        TomcatBodyLimits tomcatBodyLimits(RequestLimitsProperties limits) {
            return new TomcatBodyLimits(limits);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(JsonFactoryBuilderCustomizer.class)
    static class JsonLimits {

        @Bean
        JsonReadLimits jsonReadLimits(RequestLimitsProperties limits) {
            return new JsonReadLimits(limits);
        }
    }

    /** A form post over the limit is refused by Tomcat too, and a refused body is swallowed only up to it. */
    static final class TomcatBodyLimits implements WebServerFactoryCustomizer<TomcatServletWebServerFactory>, Ordered {

        private final int maxBytes;

        TomcatBodyLimits(RequestLimitsProperties limits) {
            this.maxBytes = (int) Math.min(Integer.MAX_VALUE, limits.maxRequestBody().toBytes());
        }

        @Override
        public void customize(TomcatServletWebServerFactory factory) {
            factory.addConnectorCustomizers(connector -> {
                connector.setMaxPostSize(maxBytes);
                if (connector.getProtocolHandler() instanceof AbstractHttp11Protocol<?> http) {
                    http.setMaxSwallowSize(maxBytes);
                }
            });
        }

        @Override
        public int getOrder() {
            return Ordered.LOWEST_PRECEDENCE;
        }
    }

    /** The parser stops at a limit as it reads, before a string, an array or a nesting is held whole. */
    static final class JsonReadLimits implements JsonFactoryBuilderCustomizer, Ordered {

        private final StreamReadConstraints constraints;

        JsonReadLimits(RequestLimitsProperties limits) {
            constraints = StreamReadConstraints.builder()
                    .maxDocumentLength(limits.maxRequestBody().toBytes())
                    .maxNestingDepth(limits.maxJsonDepth())
                    .maxStringLength(limits.maxJsonStringChars())
                    .maxTokenCount(limits.maxJsonTokens())
                    .build();
        }

        @Override
        public void customize(tools.jackson.core.json.JsonFactoryBuilder builder) {
            builder.streamReadConstraints(constraints);
        }

        @Override
        public int getOrder() {
            return Ordered.LOWEST_PRECEDENCE;
        }
    }
}
