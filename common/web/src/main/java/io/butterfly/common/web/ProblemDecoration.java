package io.butterfly.common.web;

import jakarta.servlet.http.HttpServletRequest;
import org.springframework.http.ProblemDetail;

/**
 * What a service adds to a problem written outside its handler advice (by a filter: an over-large body, a refused
 * key), as its advice adds it to the others: the coordinator adds OpenAI's {@code error} object under {@code /v1/}.
 * A service declares at most one as a bean.
 */
@FunctionalInterface
public interface ProblemDecoration {

    ProblemDecoration NONE = (request, problem) -> { };

    void decorate(HttpServletRequest request, ProblemDetail problem);
}
