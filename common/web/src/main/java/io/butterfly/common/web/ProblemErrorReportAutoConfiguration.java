package io.butterfly.common.web;

import org.apache.catalina.Valve;
import org.apache.catalina.core.StandardHost;
import org.apache.catalina.startup.Tomcat;
import org.apache.catalina.valves.ErrorReportValve;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.boot.webmvc.error.ErrorController;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;

/**
 * Puts {@link ProblemErrorReportValve} on the embedded Tomcat's Host in every Butterfly service, so even a request
 * Tomcat rejects before Spring sees it is answered in problem+json. Boot's own customizer (order 0) adds a plain
 * HTML {@link ErrorReportValve} to the Host from a context customizer; this one runs after it, takes that valve out
 * and names this valve the Host's errorReportValveClass, so StandardHost does not add the HTML one back on start.
 * Errors that reach the application but no handler answers go to {@link ProblemErrorController}.
 */
@AutoConfiguration(beforeName = "org.springframework.boot.webmvc.autoconfigure.error.ErrorMvcAutoConfiguration")
@ConditionalOnClass({Tomcat.class, TomcatServletWebServerFactory.class})
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
public class ProblemErrorReportAutoConfiguration {

    @Bean
    ProblemErrorReportCustomizer problemErrorReportCustomizer() {
        return new ProblemErrorReportCustomizer();
    }

    /** Runs before Boot's error configuration, whose BasicErrorController stands aside for any ErrorController. */
    @Bean
    @ConditionalOnMissingBean(ErrorController.class)
    ProblemErrorController problemErrorController() {
        return new ProblemErrorController();
    }

    @Bean
    UnknownRouteAdvice unknownRouteAdvice() {
        return new UnknownRouteAdvice();
    }

    static class ProblemErrorReportCustomizer
            implements WebServerFactoryCustomizer<TomcatServletWebServerFactory>, Ordered {

        @Override
        public void customize(TomcatServletWebServerFactory factory) {
            factory.addContextCustomizers(context -> {
                StandardHost host = (StandardHost) context.getParent();
                for (Valve valve : host.getPipeline().getValves()) {
                    if (valve.getClass() == ErrorReportValve.class) {
                        host.getPipeline().removeValve(valve);
                    }
                }
                host.getPipeline().addValve(new ProblemErrorReportValve());
                host.setErrorReportValveClass(ProblemErrorReportValve.class.getName());
            });
        }

        @Override
        public int getOrder() {
            return Ordered.LOWEST_PRECEDENCE;
        }
    }
}
